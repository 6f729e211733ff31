package deployment

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/rollout"
)

// An in-place setting that does not parse (the admission policy not installed) is one
// Warning event and the InPlaceUpdate condition False/InvalidAnnotation naming it and
// what kroll does instead; the rollout goes on as without the setting, and the event
// is not repeated once the condition shows it.
func TestSync_badInPlaceSettingIsAnEventAndACondition(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{inplace.StrategyAnnotation, "Sometimes", `kroll.dev/update-strategy="Sometimes" is not valid: want InPlaceIfPossible or InPlaceOnly; changes roll out as without it`},
		{inplace.GracePeriodAnnotation, "-5", `kroll.dev/in-place-grace-period="-5" is not valid: want a whole number of seconds of at least 0 (30); pods are restarted in place without a grace period`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			d := newDeployment(3, "nginx:1.14.2", "25%", "25%")
			d.Annotations = map[string]string{tc.key: tc.value}
			f := newFixture(t, d)
			f.sync()
			if ev := f.events(); !strings.Contains(ev, "Warning InvalidAnnotation "+tc.want) {
				t.Errorf("events: %q, want the Warning naming the setting", ev)
			}
			got, _ := f.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
			c := rollout.Condition(&got.Status, inplace.ConditionType)
			if c == nil || c.Status != "False" || c.Reason != inplace.ReasonInvalidAnnotation || c.Message != tc.want {
				t.Errorf("InPlaceUpdate condition %+v, want False/InvalidAnnotation %q", c, tc.want)
			}
			if rs := f.lastReplicaSetWrite(); rs == nil {
				t.Error("no ReplicaSet made: the rollout should go on as without the setting")
			}
			// Once the condition shows it, a later pass says nothing more.
			f2 := newFixture(t, got)
			f2.sync()
			if ev := f2.events(); strings.Contains(ev, "InvalidAnnotation") {
				t.Errorf("a second pass announced again: %q", ev)
			}
			// Fixed: the condition goes.
			fixed := got.DeepCopy()
			delete(fixed.Annotations, tc.key)
			f3 := newFixture(t, fixed)
			f3.sync()
			after, _ := f3.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
			if c := rollout.Condition(&after.Status, inplace.ConditionType); c != nil {
				t.Errorf("after the fix: InPlaceUpdate %+v, want none", c)
			}
		})
	}
}
