package manager

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

var (
	rolloutsInProgress = prometheus.NewDesc("kroll_rollouts_in_progress",
		"Workloads whose rollout is progressing (not complete, failed or paused), by kind.", []string{"kind"}, nil)
	rolloutsFailed = prometheus.NewDesc("kroll_rollouts_failed",
		"Workloads whose rollout has failed (progress deadline exceeded, or an InPlaceOnly change that cannot be made in place), by kind.",
		[]string{"kind"}, nil)
)

// rolloutCollector counts rollouts at scrape time from the informer caches, with the
// phases `kroll rollout status` and `kroll status` show: one definition of "failed".
type rolloutCollector struct {
	// list returns one kind's workloads, keyed by the kind's label value.
	list map[string]func() ([]runtime.Object, error)
}

// newRolloutCollector reads only the kinds whose controllers run: asking the factory
// for another kind's lister would start an informer nothing else needs.
func newRolloutCollector(f informers.SharedInformerFactory, enabled []string) *rolloutCollector {
	c := &rolloutCollector{list: map[string]func() ([]runtime.Object, error){}}
	if slices.Contains(enabled, Deployment) {
		lister := f.Apps().V1().Deployments().Lister()
		c.list["deployment"] = func() ([]runtime.Object, error) { return objects(lister.List(labels.Everything())) }
	}
	if slices.Contains(enabled, StatefulSet) {
		lister := f.Apps().V1().StatefulSets().Lister()
		c.list["statefulset"] = func() ([]runtime.Object, error) { return objects(lister.List(labels.Everything())) }
	}
	if slices.Contains(enabled, DaemonSet) {
		lister := f.Apps().V1().DaemonSets().Lister()
		c.list["daemonset"] = func() ([]runtime.Object, error) { return objects(lister.List(labels.Everything())) }
	}
	return c
}

func objects[T runtime.Object](items []T, err error) ([]runtime.Object, error) {
	out := make([]runtime.Object, len(items))
	for i, o := range items {
		out[i] = o
	}
	return out, err
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutsInProgress
	ch <- rolloutsFailed
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, list := range c.list {
		objs, err := list()
		if err != nil {
			continue
		}
		var progressing, failed float64
		for _, o := range objs {
			p, err := rolloutview.ProgressOf(rolloutview.Snapshot{Object: o})
			if err != nil {
				continue
			}
			switch p.Phase {
			case rolloutview.Progressing:
				progressing++
			case rolloutview.Failed:
				failed++
			}
		}
		ch <- prometheus.MustNewConstMetric(rolloutsInProgress, prometheus.GaugeValue, progressing, kind)
		ch <- prometheus.MustNewConstMetric(rolloutsFailed, prometheus.GaugeValue, failed, kind)
	}
}
