package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/metrics"
)

// ReportFailureAction reports what kroll did to a failed rollout of obj (kind
// "Deployment", "StatefulSet", "DaemonSet"), once its write succeeded: a Warning event (RolledBack or
// RolloutPaused) with message, and the metric of the action.
func ReportFailureAction(recorder record.EventRecorder, obj runtime.Object, kind string, act failure.Action, message string) {
	switch act {
	case failure.Rollback:
		recorder.Event(obj, corev1.EventTypeWarning, failure.EventRolledBack, message)
		metrics.RolledBack.WithLabelValues(kind).Inc()
	case failure.Pause:
		recorder.Event(obj, corev1.EventTypeWarning, failure.EventRolloutPaused, message)
		metrics.PausedOnFailure.WithLabelValues(kind).Inc()
	}
}

// ReportInvalidFailurePolicy is the Warning event of a failure policy whose annotations
// do not parse (problem: failure.Policy.Problem), sent when the problem is news.
func ReportInvalidFailurePolicy(recorder record.EventRecorder, obj runtime.Object, problem string) {
	if problem != "" {
		recorder.Event(obj, corev1.EventTypeWarning, failure.EventInvalidFailurePolicy, problem)
	}
}
