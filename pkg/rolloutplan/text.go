package rolloutplan

import (
	"fmt"
	"strings"
)

// maxListed is how many pod names a batch line lists in full; beyond it, the first
// listedWhenLong and "+N more".
const (
	maxListed      = 8
	listedWhenLong = 5
)

// Text renders the plan for people:
//
//	deployment/web: RollingUpdate (maxSurge 3, maxUnavailable 2), revision 1 → 2
//	  image app: nginx:1.25 → nginx:1.26
//	  on failure: none (a failing rollout waits, as upstream's does)
//	  1. create 3 pods of web-6f9c7d
//	  2. delete 5 pods of web-5d8f4b: web-5d8f4b-aaaaa, …
//	  …
//	  10 created, 10 deleted in 5 batches; at most 13 pods, at least 8 available
//	  (assuming each batch completes …)
//
// A batch is one numbered line; its operations are grouped by kind and revision, in the
// order they are made. A StatefulSet pod deleted and created again in one batch reads
// "replace", as does a DaemonSet node whose pod is.
func (p Plan) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Object, p.Strategy)
	switch {
	case p.From == p.To && p.To != "":
		fmt.Fprintf(&b, ", revision %s (unchanged)", p.To)
	case p.From != "" || p.To != "":
		fmt.Fprintf(&b, ", revision %s → %s", orNone(p.From), p.To)
	}
	b.WriteString("\n")
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	if p.InPlace != "" {
		fmt.Fprintf(&b, "  in-place update: %s\n", p.InPlace)
	}
	if p.FailurePolicy != "" {
		fmt.Fprintf(&b, "  on failure: %s\n", p.FailurePolicy)
	}
	if p.Budget != "" {
		fmt.Fprintf(&b, "  disruption budget: %s\n", p.Budget)
	}
	width := len(fmt.Sprint(len(p.Batches)))
	for i, batch := range p.Batches {
		fmt.Fprintf(&b, "  %*d. %s\n", width, i+1, strings.Join(p.describe(batch), "; "))
		if batch.Note != "" {
			fmt.Fprintf(&b, "  %*s  then: %s\n", width, "", batch.Note)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if len(p.Batches) > 0 {
		creates, deletes, inPlace := p.Counts()
		var did []string
		for _, c := range []struct {
			n    int
			verb string
		}{{creates, "created"}, {deletes, "deleted"}, {inPlace, "updated in place"}} {
			if c.n > 0 {
				did = append(did, fmt.Sprintf("%d %s", c.n, c.verb))
			}
		}
		fmt.Fprintf(&b, "  %s in %d %s; at most %d pods, at least %d available\n", strings.Join(did, ", "), len(p.Batches), plural(len(p.Batches), "batch", "batches"), p.MaxPods, p.MinAvailable)
		fmt.Fprintf(&b, "  (%s)\n", Assumption)
	}
	return b.String()
}

// group is consecutive-in-spirit operations of one kind on one revision.
type group struct {
	verb     string // create, delete, in-place, replace
	revision string
	// resize is the in-place operations' PodOp.Resize.
	resize string
	pods   []string
	nodes  []string
}

// describe groups a batch's operations (kind and revision, first appearance first) and
// words each group.
func (p Plan) describe(batch Batch) []string {
	ops := pairReplacements(batch.Ops, p.Kind)
	var groups []*group
	index := map[string]*group{}
	for _, op := range ops {
		key := op.verb + "\x00" + op.Revision + "\x00" + op.Resize
		g := index[key]
		if g == nil {
			g = &group{verb: op.verb, revision: op.Revision, resize: op.Resize}
			index[key] = g
			groups = append(groups, g)
		}
		g.pods = append(g.pods, op.Pod)
		g.nodes = append(g.nodes, op.Node)
	}
	var out []string
	for _, g := range groups {
		out = append(out, p.word(g))
	}
	return out
}

// verbOp is an operation with its verb in the text ("replace" for a delete and a create
// of the same pod name or node).
type verbOp struct {
	PodOp
	verb string
}

// pairReplacements merges, within a batch, a delete and a later create of the same
// StatefulSet pod (same name) or the same DaemonSet node into one "replace" at the
// delete's place, carrying the create's revision.
func pairReplacements(ops []PodOp, kind string) []verbOp {
	key := func(op PodOp) string {
		switch kind {
		case "StatefulSet":
			return op.Pod
		case "DaemonSet":
			return op.Node
		}
		return ""
	}
	out := make([]verbOp, 0, len(ops))
	deleted := map[string]int{} // key → index in out
	for _, op := range ops {
		k := key(op)
		if i, ok := deleted[k]; ok && k != "" && op.Op == Create {
			out[i].verb, out[i].Revision = "replace", op.Revision
			if kind == "DaemonSet" {
				out[i].Pod = op.Pod
			}
			delete(deleted, k)
			continue
		}
		if op.Op == Delete && k != "" {
			deleted[k] = len(out)
		}
		out = append(out, verbOp{PodOp: op, verb: string(op.Op)})
	}
	return out
}

// word says one group: what happens, to how many or which pods, at which revision,
// and for pods updated in place how they are resized: "update 2 pods in place to
// web-6f9c7d: web-a, web-b; resize in place: app: cpu request 100m → 200m (no
// restart)".
func (p Plan) word(g *group) string {
	w := p.operation(g)
	if g.resize != "" {
		w += "; resize in place: " + g.resize
	}
	return w
}

// operation says what happens to a group's pods, at which revision.
func (p Plan) operation(g *group) string {
	n := len(g.pods)
	switch p.Kind {
	case "DaemonSet":
		nodes := list(g.nodes)
		switch g.verb {
		case "create":
			return fmt.Sprintf("create on %s (%s)", nodes, g.revision)
		case "replace":
			return fmt.Sprintf("replace on %s (→ %s)", nodes, g.revision)
		case "in-place":
			return fmt.Sprintf("update in place on %s (→ %s)", nodes, g.revision)
		default:
			return fmt.Sprintf("delete %s on %s", plural(n, "the pod", fmt.Sprintf("%d pods", n)), nodes)
		}
	case "StatefulSet":
		pods := list(g.pods)
		switch g.verb {
		case "create":
			return fmt.Sprintf("create %s (%s)", pods, g.revision)
		case "replace":
			return fmt.Sprintf("replace %s (→ %s)", pods, g.revision)
		case "in-place":
			return fmt.Sprintf("update %s in place (→ %s)", pods, g.revision)
		default:
			return fmt.Sprintf("delete %s", pods)
		}
	default:
		count := fmt.Sprintf("%d %s", n, plural(n, "pod", "pods"))
		switch g.verb {
		case "create":
			return fmt.Sprintf("create %s of %s", count, g.revision)
		case "in-place":
			return fmt.Sprintf("update %s in place to %s: %s", count, g.revision, list(g.pods))
		default:
			return fmt.Sprintf("delete %s of %s: %s", count, g.revision, list(g.pods))
		}
	}
}

// list joins names, the first few and "+N more" beyond maxListed.
func list(names []string) string {
	if len(names) > maxListed {
		return fmt.Sprintf("%s +%d more", strings.Join(names[:listedWhenLong], ", "), len(names)-listedWhenLong)
	}
	return strings.Join(names, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
