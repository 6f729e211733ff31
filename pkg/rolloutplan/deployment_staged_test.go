package rolloutplan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/staging"
)

func TestDeploymentStaged(t *testing.T) {
	annotated := func(key, value string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			setImage("nginx:1.26")(d)
			d.Annotations[key] = value
		}
	}
	tests := []struct {
		name, key, value string
		inPlace          bool
		// shape of the batches, "then:" notes after them, and the plan's last note part.
		shape string
		notes []string
		note  string
	}{
		// Partition 18: +2 (not 5), −2 (old 18, not 15); promoted, partition 10: +5 (7 new,
		// 25 pods), −8 (old 10: 18 − 10, within the 10 of maxUnavailable), +3 (10 new);
		// after 5s, no partition: +5, −10, +5.
		{name: "steps 10%, pause, 50%, pause: 5s, 100% of 20 at 25%/25% (surge 5, unavailable 5): 2, a pause until promoted, 10, a pause of 5s, 20",
			key: staging.StepsAnnotation, value: "10%, pause, 50%, pause: 5s, 100%",
			shape: "+2 | -2 | +5 | -8 | +3 | +5 | -10 | +5",
			notes: []string{"2: pause until promoted (kroll rollout promote): step 1/5", "5: pause 5s: step 3/5"}},
		{name: "partition 10 of 20: the rollout stops at 10 new, the last batch says why",
			key: staging.PartitionAnnotation, value: "10",
			shape: "+5 | -10 | +5",
			notes: []string{"3: the partition holds the rollout: 10 old pods stay (kroll.dev/partition)"},
			note:  "the rollout stops with 10 old pods left and 10 of 20 replicas new"},
		{name: "in place, partition 15 of 20: 5 pods updated in place, 15 stay",
			key: staging.PartitionAnnotation, value: "15", inPlace: true,
			shape: "~5",
			notes: []string{"1: the partition holds the rollout: 15 old pods stay (kroll.dev/partition)"},
			note:  "the rollout stops with 15 old pods left and 5 of 20 replicas new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := deploymentCase{cur: newDeployment("web", 20, "25%", "25%"), sizes: []int32{20}, edit: annotated(tt.key, tt.value)}
			if tt.inPlace {
				tc.edit = func(d *appsv1.Deployment) {
					annotated(tt.key, tt.value)(d)
					d.Annotations["kroll.dev/update-strategy"] = "InPlaceIfPossible"
				}
			}
			cur, rss, pods, next := tc.objects()
			plan, err := Deployment(cur, rss, pods, next, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); got != tt.shape {
				t.Errorf("shape %q, want %q", got, tt.shape)
			}
			var notes []string
			for i, b := range plan.Batches {
				if b.Note != "" {
					notes = append(notes, fmt.Sprintf("%d: %s", i+1, b.Note))
				}
			}
			if strings.Join(notes, "\n") != strings.Join(tt.notes, "\n") {
				t.Errorf("batch notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(tt.notes, "\n"))
			}
			if tt.note != "" && !strings.Contains(strings.Join(plan.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one with %q", plan.Notes, tt.note)
			}
			if text := plan.Text(); len(tt.notes) > 0 && !strings.Contains(text, "then: ") {
				t.Errorf("the text does not show the notes between batches:\n%s", text)
			}
		})
	}
}
