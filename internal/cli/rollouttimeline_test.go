package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kroll-dev/kroll/pkg/history"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// A configuration rollout of web to revision 2, held twice by web-pdb and still held:
// the chart's title names the change (the new ReplicaSet's change-cause), the chart
// labels the waits, and the summary line lists them.
func TestRolloutTimeline_budgetWaitsAndChangeCause(t *testing.T) {
	objs := stagedWeb(nil, 2, 2, "")
	for _, o := range objs {
		if rs, ok := o.(*appsv1.ReplicaSet); ok && rs.Name == "web-new" {
			rs.Annotations[history.ChangeCauseAnnotation] = "configmap/app-config changed"
		}
	}
	d := objs[0].(*appsv1.Deployment)
	d.Annotations[timeline.Annotation] = timeline.Timeline{Revision: "2", Start: stepsNow.Add(-time.Minute), Desired: 4,
		Samples: []timeline.Sample{{At: 0, Counts: timeline.Counts{Old: 4, Available: 4}}, {At: 20 * time.Second, Counts: timeline.Counts{Old: 2, New: 2, Available: 4}}},
		Waits:   []timeline.Wait{{From: 5 * time.Second, To: 12 * time.Second, PDB: "web-pdb"}, {From: 20 * time.Second, To: 20 * time.Second, PDB: "web-pdb", Open: true}},
	}.String()
	var out, errOut bytes.Buffer
	k := &kubectlVerbs{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}}
	svg := filepath.Join(t.TempDir(), "web.svg")
	if err := k.writeTimeline(context.Background(), fake.NewClientset(objs...), webRef, svg, ".svg"); err != nil {
		t.Fatal(err)
	}
	want := "deployment/web: 2 samples over 20s written to " + svg + "\n" +
		"  waited 7s on PodDisruptionBudget web-pdb, from 5s to 12s\n" +
		"  waiting on PodDisruptionBudget web-pdb since 20s\n"
	if out.String() != want || errOut.Len() != 0 {
		t.Errorf("stdout\n%s\nstderr %q; want\n%s", out.String(), errOut.String(), want)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<title>deployment/web → revision 2 (configmap/app-config changed)</title>", ">waiting on PDB web-pdb</text>"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("the chart lacks %s", s)
		}
	}
}
