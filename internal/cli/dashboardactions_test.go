package cli

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/dashboard"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// The dashboard's actions are the CLI's: each writes what its verb writes, and says
// the verb's line.
func TestDashboardActionsWriteWhatTheVerbsWrite(t *testing.T) {
	steps := map[string]string{staging.StepsAnnotation: "25%, pause, 100%"}
	for _, tc := range []struct {
		action dashboard.Action
		line   string
		check  func(t *testing.T, client *fake.Clientset)
	}{
		{dashboard.Action{Verb: dashboard.VerbPause}, "deployment.apps/web paused", func(t *testing.T, c *fake.Clientset) {
			if d := getWeb(t, c); !d.Spec.Paused {
				t.Errorf("not paused")
			}
		}},
		{dashboard.Action{Verb: dashboard.VerbSetImage, Container: "app", Image: "nginx:1.27"}, "deployment.apps/web image updated", func(t *testing.T, c *fake.Clientset) {
			if img := getWeb(t, c).Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
				t.Errorf("image %s, want nginx:1.27", img)
			}
		}},
		{dashboard.Action{Verb: dashboard.VerbRestart}, "deployment.apps/web restarted", func(t *testing.T, c *fake.Clientset) {
			if getWeb(t, c).Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
				t.Errorf("no restartedAt on the template")
			}
		}},
		{dashboard.Action{Verb: dashboard.VerbPromote}, "deployment.apps/web promoted to step 2/3", func(t *testing.T, c *fake.Clientset) {
			if got := getWeb(t, c).Annotations[staging.StepAnnotation]; got != "2/3" {
				t.Errorf("step record %q, want 2/3", got)
			}
		}},
		{dashboard.Action{Verb: dashboard.VerbUndo, Revision: 1}, "deployment.apps/web rolled back", func(t *testing.T, c *fake.Clientset) {
			if img := getWeb(t, c).Spec.Template.Spec.Containers[0].Image; img != "nginx:1.25" {
				t.Errorf("image %s after undo to 1, want revision 1's nginx:1.25", img)
			}
		}},
	} {
		t.Run(tc.action.Verb, func(t *testing.T) {
			client := fake.NewClientset(stagedWeb(steps, 3, 1, "1/3")...)
			a := tc.action
			a.Kind, a.Namespace, a.Name = "deployment", "default", "web"
			line, err := dashboardActions{}.Do(context.Background(), client, a)
			if err != nil || line != tc.line {
				t.Fatalf("Do = %q, %v; want %q", line, err, tc.line)
			}
			tc.check(t, client)
		})
	}
	t.Run("pause of a paused Deployment is the pauser's refusal", func(t *testing.T) {
		client := fake.NewClientset(stagedWeb(steps, 3, 1, "1/3")...)
		a := dashboard.Action{Verb: dashboard.VerbPause, Kind: "deployment", Namespace: "default", Name: "web"}
		if _, err := (dashboardActions{}).Do(context.Background(), client, a); err != nil {
			t.Fatal(err)
		}
		_, err := dashboardActions{}.Do(context.Background(), client, a)
		if err == nil || !strings.Contains(err.Error(), "deployment.apps/web is already paused") {
			t.Errorf("second pause: %v, want the pauser's refusal", err)
		}
	})
}

func getWeb(t *testing.T, c *fake.Clientset) *appsv1.Deployment {
	t.Helper()
	d, err := c.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
