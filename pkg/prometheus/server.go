// Package prometheus runs a real Prometheus inside kroll: the service discovery and
// scrape managers, a TSDB, the PromQL engine and the HTTP API (/api/v1/...), from the
// github.com/prometheus/prometheus module, the same code the prometheus binary runs.
// It is what `kroll up --prometheus` starts so that rollouts can be judged by metrics
// (pkg/analysis) against a Prometheus that scrapes the simulated pods as a real one
// scrapes real ones: through Kubernetes service discovery of the cluster's pods.
//
// Why embedded rather than a prometheus binary kroll starts: Debian's package (2.42)
// is built without Kubernetes service discovery, and a binary outside kroll's process
// could not reach the simulated pods but through a proxy. The cost, measured on the
// kroll executable: 244 → 256 MB (+12 MB); at start, +1.1 MiB of package
// initialisation and +23 MiB of the executable's pages resident, which long-running
// commands give back (internal/residency); nothing of it runs without --prometheus.
//
// What differs from the binary is the plumbing only: one process may run several
// servers (each with a registry of its own, not the global one), the targets are
// dialled through Config.Dial (the simulated pods' addresses exist only inside kroll),
// and there is no web UI, rule evaluation, alerting or remote storage.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/grafana/regexp"
	promclient "github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	_ "github.com/prometheus/prometheus/discovery/kubernetes" // kubernetes_sd_configs
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/tsdb"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// Config describes one embedded Prometheus.
type Config struct {
	// DataDir holds the TSDB.
	DataDir string
	// Listener serves the HTTP API; the server closes it when it stops.
	Listener net.Listener
	// YAML is the configuration, as prometheus.yml (global, scrape_configs).
	YAML string
	// Dial, if set, connects to scrape targets.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives the components' logs; nil discards them.
	Logger *slog.Logger
	// Retention bounds how long samples are kept; 0: tsdb's default (15 days).
	Retention time.Duration
}

// Run runs the server until ctx ends; it returns the first component's failure.
func Run(ctx context.Context, cfg Config) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	promCfg, err := config.Load(cfg.YAML, logger)
	if err != nil {
		cfg.Listener.Close()
		return fmt.Errorf("prometheus configuration: %w", err)
	}
	reg := promclient.NewRegistry()

	opts := tsdb.DefaultOptions()
	if cfg.Retention > 0 {
		opts.RetentionDuration = cfg.Retention.Milliseconds()
	}
	db, err := tsdb.Open(cfg.DataDir, logger.With("component", "tsdb"), reg, opts, nil)
	if err != nil {
		cfg.Listener.Close()
		return fmt.Errorf("open the TSDB in %s: %w", cfg.DataDir, err)
	}
	defer db.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sdMetrics, err := discovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		cfg.Listener.Close()
		return err
	}
	discoveryManager := discovery.NewManager(ctx, logger.With("component", "discovery manager scrape"), reg, sdMetrics, discovery.Name("scrape"))
	if discoveryManager == nil {
		cfg.Listener.Close()
		return errors.New("prometheus: the discovery manager could not be created")
	}
	// The first scrape at once, not after the discovery manager's 5 s reload interval.
	scrapeOpts := scrape.Options{DiscoveryReloadOnStartup: true}
	if cfg.Dial != nil {
		scrapeOpts.HTTPClientOptions = append(scrapeOpts.HTTPClientOptions, config_util.WithDialContextFunc(cfg.Dial))
	}
	scrapeManager, err := scrape.NewManager(&scrapeOpts, logger.With("component", "scrape manager"), nil, nil, db, reg)
	if err != nil {
		cfg.Listener.Close()
		return err
	}
	if err := scrapeManager.ApplyConfig(promCfg); err != nil {
		cfg.Listener.Close()
		return fmt.Errorf("prometheus scrape configuration: %w", err)
	}
	sdConfigs := map[string]discovery.Configs{}
	scfgs, err := promCfg.GetScrapeConfigs()
	if err != nil {
		cfg.Listener.Close()
		return err
	}
	for _, sc := range scfgs {
		sdConfigs[sc.JobName] = sc.ServiceDiscoveryConfigs
	}
	if err := discoveryManager.ApplyConfig(sdConfigs); err != nil {
		cfg.Listener.Close()
		return fmt.Errorf("prometheus service discovery: %w", err)
	}

	engine := promql.NewEngine(promql.EngineOpts{
		Logger:               logger.With("component", "query engine"),
		Reg:                  reg,
		MaxSamples:           50_000_000,
		Timeout:              2 * time.Minute,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	})
	api := v1.NewAPI(engine, db, nil, nil, db,
		func(context.Context) v1.ScrapePoolsRetriever { return scrapeManager },
		func(context.Context) v1.TargetRetriever { return scrapeManager },
		func(context.Context) v1.AlertmanagerRetriever { return noAlertmanagers{} },
		func() config.Config { return *promCfg },
		map[string]string{},
		v1.GlobalURLOptions{ListenAddress: cfg.Listener.Addr().String(), Host: cfg.Listener.Addr().String(), Scheme: "http"},
		func(f http.HandlerFunc) http.HandlerFunc { return f },
		nil, cfg.DataDir, false, false, 0, logger.With("component", "api"),
		func(context.Context) v1.RulesRetriever { return noRules{} },
		0, 0, 0, false, regexp.MustCompile("^$"),
		func() (v1.RuntimeInfo, error) { return v1.RuntimeInfo{}, nil },
		&v1.PrometheusVersion{Version: "embedded"},
		nil, nil, reg, reg, nil, false, nil, false, false, false, false, 5*time.Minute, false, false, nil, nil, v1.OpenAPIOptions{}, nil,
	)
	router := route.New()
	api.Register(router.WithPrefix("/api/v1"))
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", router)
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Ready.") })
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Healthy.") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errs := make(chan error, 3)
	go func() { errs <- discoveryManager.Run() }()
	go func() { errs <- scrapeManager.Run(discoveryManager.SyncCh()) }()
	go func() {
		if err := srv.Serve(cfg.Listener); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("prometheus HTTP API: %w", err)
		}
	}()
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errs:
	}
	cancel()
	scrapeManager.Stop()
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shutdown)
	return failed
}

type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL        { return nil }
func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return nil }

type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return nil }
func (noRules) AlertingRules() []*rules.AlertingRule { return nil }
