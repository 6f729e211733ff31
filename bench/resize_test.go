package bench

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// The resize scenario compares the three arms at QPS 20 on nodes with room for every
// pod at the new request, surge included.
func TestResizeScenario(t *testing.T) {
	var s *Scenario
	for _, x := range Scenarios(1, time.Second, time.Second) {
		if x.Name == "resize-1000" {
			s = &x
		}
	}
	if s == nil {
		t.Fatal("no resize-1000 scenario at scale 1")
	}
	var arms []string
	for _, a := range s.Arms {
		arms = append(arms, a.Name)
	}
	if got := strings.Join(arms, ","); got != "kroll,kroll-inplace,upstream" || s.Limits != DefaultLimits || s.Size != 1000 {
		t.Errorf("arms %s, limits %s, size %d; want kroll,kroll-inplace,upstream at %s, 1000", got, s.Limits, s.Size, DefaultLimits)
	}
	node := kubelet.DefaultConfig()
	pods := s.Size * 125 / 100 // the 25% surge
	need := resource.MustParse(newCPU)
	need.SetMilli(need.MilliValue() * int64(pods))
	room := node.CPU.DeepCopy()
	room.SetMilli(room.MilliValue() * int64(s.Nodes))
	if room.Cmp(need) < 0 || s.Nodes*node.Pods < pods {
		t.Errorf("%d nodes of %s CPUs and %d pods: no room for %d pods at %s", s.Nodes, node.CPU.String(), node.Pods, pods, newCPU)
	}
	if perNode := int64(node.Pods) * need.MilliValue() / int64(pods); perNode > node.CPU.MilliValue() {
		t.Errorf("a full node (%d pods at %s) holds %dm, more than its %s CPUs", node.Pods, newCPU, perNode, node.CPU.String())
	}
}

// The change the scenario makes is one pods/resize accepts (in place under
// InPlaceIfPossible), and a template change all the same (the RollingUpdate replaces
// every pod).
func TestResizeChangeIsInPlaceEligible(t *testing.T) {
	d := newSizedDeployment("bench", 3, true)
	before, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	after, err := strategicpatch.StrategicMergePatch(before, cpuPatch, appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	var next appsv1.Deployment
	if err := json.Unmarshal(after, &next); err != nil {
		t.Fatal(err)
	}
	if fields := inplace.DiffResize(&d.Spec.Template, &next.Spec.Template, inplace.ResizeRules{}); len(fields) > 0 {
		t.Errorf("the cpu change cannot be made in place: %v", fields)
	}
	if got := inplace.ResizeText(&d.Spec.Template, &next.Spec.Template); got != "app: cpu request 100m → 200m (no restart)" {
		t.Errorf("resize %q, want app: cpu request 100m → 200m (no restart)", got)
	}
}

// The report compares the resize's in-place arm with the RollingUpdate, and counts
// each arm's requests by verb.
func TestResizeInReport(t *testing.T) {
	r := newResults(1)
	s := resizeScenario(1000)
	r.addScenario(s)
	for _, arm := range s.Arms {
		r.Samples = append(r.Samples, Sample{Scenario: s.Name, Arm: arm.Name, Rep: 1, Seconds: 10, Requests: requestCounts{"PATCH": 1000, "POST": 10}})
	}
	md := r.Markdown()
	for _, want := range []string{
		"**In place (InPlaceIfPossible) against RollingUpdate**, kroll's controllers: " + s.Title,
		"| resize-1000 | kroll-inplace | 10.0 | 0.000 | 1000 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
