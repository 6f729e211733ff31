package conformance

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// slowFirst are the spec text prefixes whose specs start first: upstream's StatefulSet
// helpers poll every 10 s (e2estatefulset.StatefulSetPoll), so those specs take 14–80 s
// against 1–20 s for the other kinds' specs; started first, they leave the short
// specs to fill the other processes while they wait.
var slowFirst = []string{"[sig-apps] StatefulSet "}

// runPlan is how the selected specs are spread over processes.
type runPlan struct {
	// parallel are the specs that may run beside others, one process each, the slow
	// ones first. Empty when every selected spec is serial.
	parallel []string
	// serial are the specs upstream marks [Serial] (the DaemonSet specs, which
	// expect every node to themselves, and the ControllerRevision spec: the
	// framework's WithSerial gives them a "Serial" label, not ginkgo's Serial
	// decorator) and those in Ordered containers: they run in one process after every parallel spec has
	// finished, as ginkgo runs them in a parallel run. Empty when there are none.
	serial []string
}

// planRun splits the specs a dry run selected (those it reports passed; the rest it
// skipped) into those that run side by side and those that run alone, in the order
// ginkgo listed them but for the slow ones first.
func planRun(listed []types.SpecReport) runPlan {
	var p runPlan
	for _, s := range listed {
		if s.LeafNodeType != types.NodeTypeIt || s.State != types.SpecStatePassed {
			continue
		}
		if s.IsSerial || s.IsInOrderedContainer || slices.Contains(s.Labels(), "Serial") {
			p.serial = append(p.serial, s.FullText())
		} else {
			p.parallel = append(p.parallel, s.FullText())
		}
	}
	sort.SliceStable(p.parallel, func(i, j int) bool { return isSlow(p.parallel[i]) && !isSlow(p.parallel[j]) })
	return p
}

func isSlow(text string) bool {
	for _, prefix := range slowFirst {
		if strings.HasPrefix(text, prefix) {
			return true
		}
	}
	return false
}

// focusOn is a -ginkgo.focus pattern that selects exactly the specs with these full
// texts. Ginkgo matches the pattern against "<suite description> <full text>", so
// each text is anchored by the space before it and the end of the string.
func focusOn(texts ...string) string {
	quoted := make([]string, len(texts))
	for i, s := range texts {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return ` (` + strings.Join(quoted, "|") + `)$`
}

func TestPlanRun(t *testing.T) {
	spec := func(text string, state types.SpecState, serial, ordered bool) types.SpecReport {
		return types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: text, ContainerHierarchyTexts: []string{"[sig-apps]"},
			State: state, IsSerial: serial, IsInOrderedContainer: ordered,
		}
	}
	suiteNode := types.SpecReport{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed}
	tests := []struct {
		name   string
		listed []types.SpecReport
		want   runPlan
	}{
		{
			name: "StatefulSet specs move ahead of the others, each group in listed order",
			listed: []types.SpecReport{
				spec("Deployment a", types.SpecStatePassed, false, false),
				spec("StatefulSet b", types.SpecStatePassed, false, false),
				spec("ReplicaSet c", types.SpecStatePassed, false, false),
				spec("StatefulSet d", types.SpecStatePassed, false, false),
			},
			want: runPlan{parallel: []string{"[sig-apps] StatefulSet b", "[sig-apps] StatefulSet d", "[sig-apps] Deployment a", "[sig-apps] ReplicaSet c"}},
		},
		{
			name: "serial and ordered specs run alone; skipped specs and suite nodes not at all",
			listed: []types.SpecReport{
				suiteNode,
				spec("Daemon set [Serial] a", types.SpecStatePassed, true, false),
				spec("Deployment b", types.SpecStatePassed, false, false),
				spec("Job c", types.SpecStateSkipped, false, false),
				spec("Ordered d", types.SpecStatePassed, false, true),
			},
			want: runPlan{parallel: []string{"[sig-apps] Deployment b"}, serial: []string{"[sig-apps] Daemon set [Serial] a", "[sig-apps] Ordered d"}},
		},
		{
			name: "a spec labelled Serial, as the framework's WithSerial labels one, runs alone",
			listed: []types.SpecReport{
				{LeafNodeType: types.NodeTypeIt, ContainerHierarchyTexts: []string{"[sig-apps] Daemon set [Serial]"}, LeafNodeText: "a",
					ContainerHierarchyLabels: [][]string{{"sig-apps", "Serial"}}, LeafNodeLabels: []string{"Conformance"}, State: types.SpecStatePassed},
				spec("StatefulSet b", types.SpecStatePassed, false, false),
			},
			want: runPlan{parallel: []string{"[sig-apps] StatefulSet b"}, serial: []string{"[sig-apps] Daemon set [Serial] a"}},
		},
		{name: "nothing selected: nothing to run", listed: []types.SpecReport{suiteNode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planRun(tt.listed); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planRun:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestFocusOn(t *testing.T) {
	pattern := regexp.MustCompile(focusOn("[sig-apps] Deployment should (scale)", "[sig-apps] Daemon set [Serial] b"))
	for _, tt := range []struct {
		matched string // what ginkgo matches: the suite's description, a space, the full text
		want    bool
	}{
		{"Kubernetes e2e suite [sig-apps] Deployment should (scale)", true},
		{"Kubernetes e2e suite [sig-apps] Daemon set [Serial] b", true},
		{"Kubernetes e2e suite [sig-apps] Deployment should (scale) quickly", false},
		{"Kubernetes e2e suite [sig-apps] Deployment should scale", false},
		{"Kubernetes e2e suite [sig-apps] Daemon set [Serial] bb", false},
	} {
		if got := pattern.MatchString(tt.matched); got != tt.want {
			t.Errorf("%q matches %q: %v, want %v", pattern, tt.matched, got, tt.want)
		}
	}
}
