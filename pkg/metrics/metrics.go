// Package metrics holds the Prometheus metrics kroll's controller manager serves on
// /metrics: its work queues', its syncs', its API requests' and its leadership. They live
// in one registry of their own (not Prometheus' global one), because client-go's queue
// and leader-election hooks are process-wide: there is one set per process, whichever
// managers run in it.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/util/workqueue"
)

// Registry holds every metric below plus the Go runtime's and the process's.
var Registry = prometheus.NewRegistry()

var (
	// SyncDuration is how long each sync of one object took, by controller and result
	// (success, error or panic).
	SyncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kroll_sync_duration_seconds",
		Help:    "How long one sync of one object took, by controller and result (success, error, panic).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1ms … 16s
	}, []string{"controller", "result"})

	// SyncPanics counts syncs that panicked; each was recovered and retried with back-off.
	SyncPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kroll_sync_panics_total",
		Help: "Syncs that panicked, by controller; each was recovered, logged with its object and retried with back-off.",
	}, []string{"controller"})

	// APIRequests counts the API requests kroll's clients made, by the client (a
	// controller, or "informers"), the request's Kubernetes verb, group, resource and
	// subresource, and the HTTP status code ("<error>" when no response came).
	APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kroll_api_requests_total",
		Help: "API requests by client, verb, group, resource, subresource and HTTP status code.",
	}, []string{"client", "verb", "group", "resource", "subresource", "code"})

	// APIRequestDuration is each API request's round trip, by client and verb. Watches are
	// left out: they last as long as the connection.
	APIRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kroll_api_request_duration_seconds",
		Help:    "API request round trip by client and verb (watches excluded).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"client", "verb"})

	// RolledBack counts rollouts kroll rolled back on failure (kroll.dev/on-failure:
	// Rollback), by kind (Deployment, StatefulSet, DaemonSet).
	RolledBack = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kroll_rollouts_rolled_back_total",
		Help: "Rollouts rolled back on failure (kroll.dev/on-failure: Rollback), by kind.",
	}, []string{"kind"})

	// PausedOnFailure counts rollouts kroll paused on failure (kroll.dev/on-failure:
	// Pause), by kind.
	PausedOnFailure = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kroll_rollouts_paused_on_failure_total",
		Help: "Rollouts paused on failure (kroll.dev/on-failure: Pause), by kind.",
	}, []string{"kind"})

	// Leader is 1 while this process holds the leader lease, 0 otherwise (upstream's name).
	Leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "1 while this process leads (holds the lease named by name), 0 otherwise.",
	}, []string{"name"})
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		SyncDuration, SyncPanics, APIRequests, APIRequestDuration, RolledBack, PausedOnFailure, Leader)
	registerWorkqueueMetrics()
}

// The work queues' metrics, under upstream's names (workqueue_depth{name}, …), so that
// dashboards made for kube-controller-manager read kroll's too.
var (
	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth", Help: "Current depth of the work queue.",
	}, []string{"name"})
	queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the work queue.",
	}, []string{"name"})
	queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help:    "How long an item stays in the work queue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	queueWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds",
		Help:    "How long processing an item from the work queue takes.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers.",
	}, []string{"name"})
	queueLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "How long the longest running processor of the work queue has been running.",
	}, []string{"name"})
	queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the work queue.",
	}, []string{"name"})
)

type queueMetrics struct{}

func (queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return queueDepth.WithLabelValues(name)
}
func (queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return queueAdds.WithLabelValues(name)
}
func (queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return queueLatency.WithLabelValues(name)
}
func (queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return queueWorkDuration.WithLabelValues(name)
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueUnfinished.WithLabelValues(name)
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueLongest.WithLabelValues(name)
}
func (queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return queueRetries.WithLabelValues(name)
}

// registerWorkqueueMetrics hands client-go the queue metrics. It must run before the
// first named queue is made (queues read the provider when built), hence init: every
// package that makes kroll's queues imports this one.
func registerWorkqueueMetrics() {
	Registry.MustRegister(queueDepth, queueAdds, queueLatency, queueWorkDuration, queueUnfinished, queueLongest, queueRetries)
	workqueue.SetProvider(queueMetrics{})
}

// ObserveSync records one sync of controller that took d and ended in result.
func ObserveSync(controller, result string, d time.Duration) {
	SyncDuration.WithLabelValues(controller, result).Observe(d.Seconds())
}
