package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// krollUpKubeconfig is where a `kroll up` started in the current directory writes its
// kubeconfig (its default --data-dir).
var krollUpKubeconfig = filepath.Join(".kroll", "kubeconfig")

// clientFlags are kubectl's connection flags (--kubeconfig, --context, -n, --server, …).
type clientFlags struct {
	config     *genericclioptions.ConfigFlags
	cmd        *cobra.Command
	kubeconfig kubeconfigChoice
}

func addClientFlags(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{config: genericclioptions.NewConfigFlags(true), cmd: cmd}
	f.config.AddFlags(cmd.Flags())
	return f
}

// kubeconfigMissing is the one-line error for a --kubeconfig that names no file, or
// nil. client-go's own error is a bare "stat PATH: no such file or directory", which
// does not say which flag or what to do; kubectl's verbs print that one as kubectl does.
func kubeconfigMissing(path string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kubeconfig %s does not exist; pass --kubeconfig with the path of a kubeconfig file", path)
	}
	return nil
}

// client returns a clientset and the namespace to work in (-n, else the context's,
// else "default").
func (f *clientFlags) client() (kubernetes.Interface, string, string, error) {
	if err := f.kubeconfig.resolve(f.config, f.cmd.ErrOrStderr()); err != nil {
		return nil, "", "", err
	}
	if err := kubeconfigMissing(*f.config.KubeConfig); err != nil {
		return nil, "", "", err
	}
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("no usable kubeconfig: %w; start a cluster with 'kroll up' or pass --kubeconfig", err)
	}
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", "", err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kroll"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", "", err
	}
	return client, ns, cfg.Host, nil
}

// explainUnreachable rewrites an error that is really "the API server cannot be
// reached" into one line that says so and what to check.
func explainUnreachable(err error, host string) error {
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &oe) || (errors.As(err, &ue) && (ue.Timeout() || errors.As(ue.Err, &oe))) {
		return fmt.Errorf("cannot reach the API server at %s (%v): is the cluster running ('kroll up'), and is the kubeconfig right?", host, rootCause(err))
	}
	return err
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
