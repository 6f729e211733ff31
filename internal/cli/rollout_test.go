package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// A rollout past its progress deadline: kubectl prints `error: deployment "web"
// exceeded its progress deadline` once, on stderr. kroll's status prints nothing of
// it on stdout, in any form but JSON (data), and returns it for Main to print once.
func TestRolloutStatus_aFailureIsReportedOnce(t *testing.T) {
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 2, Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}},
	}
	for _, form := range []string{"plain", "terminal"} {
		var out bytes.Buffer
		p := statusPrinter{out: &out, terminal: form == "terminal"}
		done, err := p.print(rolloutview.Snapshot{Object: d, Now: time.Now()})
		if !done || err == nil || errorLine(err) != `error: deployment "web" exceeded its progress deadline` {
			t.Errorf("%s: done %v, err %v; want done and kubectl's error line", form, done, err)
		}
		if strings.Contains(out.String(), "exceeded") {
			t.Errorf("%s: the error is on stdout too:\n%s", form, out.String())
		}
	}
}
