package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kroll-dev/kroll/pkg/cluster"
)

// olderSerialization checks that templates stored by an older apiserver are the same
// revision to kroll, as they are to upstream: a StatefulSet's ControllerRevision written
// with fewer defaults and "creationTimestamp":null, and a ReplicaSet (made by upstream's
// controllers, then orphaned) whose template a new Deployment spells out with every
// default. Upstream's controllers make the objects and stop; kroll's take over and must
// create no revision, no ReplicaSet and no pod, and delete none.
//
// Asked first, a dry run reports no more than kroll then does: d-legacy's adoption of
// its ReplicaSet (where its sync ends, the adoption refused), nothing for ss-legacy
// (its stored revision is the template's), and neither a new ReplicaSet or
// ControllerRevision nor a pod write.
func olderSerialization(t *testing.T, c *cluster.Cluster, stopBefore func(), startKroll func() func(), dryRun *takeoverDryRun) (stopKroll func()) {
	ctx := context.Background()
	p := &population{client: c.Client, ns: "takeover-legacy", members: []member{
		{name: "ss-legacy", kind: "StatefulSet", state: "revision of an older serializer", setup: func(ctx context.Context, p *population) error {
			if _, err := p.client.AppsV1().StatefulSets(p.ns).Create(ctx, statefulSet("ss-legacy", 2, nil), metav1.CreateOptions{}); err != nil {
				return err
			}
			return waitFor(ctx, p, "ready", statefulSetRolled("ss-legacy"))
		}},
		{name: "d-legacy", kind: "Deployment", state: "ReplicaSet template differing by defaulting", inFlight: true, setup: func(ctx context.Context, p *population) error {
			rs := &appsv1.ReplicaSet{ObjectMeta: objectMeta("d-legacy-5d8f7"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: selector("d-legacy"), Template: template("d-legacy", 0, nil)}}
			rs.Labels[workloadLabel] = "d-legacy"
			if _, err := p.client.AppsV1().ReplicaSets(p.ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				return err
			}
			return waitFor(ctx, p, "2 available", func(ctx context.Context, p *population) (bool, string) {
				rs, err := p.client.AppsV1().ReplicaSets(p.ns).Get(ctx, rs.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return rs.Status.AvailableReplicas == 2, fmt.Sprintf("%+v", rs.Status)
			})
		}},
	}}
	if err := p.setupAll(ctx); err != nil {
		t.Fatal(err)
	}
	stopBefore()
	revs := must(c.Client.AppsV1().ControllerRevisions(p.ns).List(ctx, metav1.ListOptions{}))
	if len(revs.Items) != 1 {
		t.Fatalf("ss-legacy has %d revisions, want 1", len(revs.Items))
	}
	rev := revs.Items[0]
	rev.Data.Raw = olderEncoding(t, rev.Data.Raw)
	rev.ResourceVersion, rev.UID, rev.ManagedFields = "", "", nil
	if err := c.Client.AppsV1().ControllerRevisions(p.ns).Delete(ctx, rev.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.AppsV1().ControllerRevisions(p.ns).Create(ctx, &rev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := startLedger(t, c.Client, p.ns)
	// The Deployment spells out what the apiserver defaults in the ReplicaSet's template.
	d := deployment("d-legacy", 2, nil)
	spec := &d.Spec.Template.Spec
	spec.DNSPolicy, spec.RestartPolicy, spec.SchedulerName = corev1.DNSClusterFirst, corev1.RestartPolicyAlways, corev1.DefaultSchedulerName
	spec.SecurityContext = &corev1.PodSecurityContext{}
	spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	spec.Containers[0].TerminationMessagePath, spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessagePathDefault, corev1.TerminationMessageReadFile
	if _, err := c.Client.AppsV1().Deployments(p.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, report := dryRun.run(t, "before kroll takes the older serializations")
	checkLegacyDryRun(t, p.ns, r, report)
	stopKroll = startKroll()
	time.Sleep(takeoverWindow)
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) (bool, string) { return deploymentComplete(ctx, p, "d-legacy") }); err != nil {
		t.Errorf("d-legacy: %v", err)
	}
	writes := l.stop()
	t.Logf("ledger of the older serializations: %s", summarize(writes))
	for _, w := range writes {
		if w.verb != "MODIFIED" && w.kind != "Deployment" {
			t.Errorf("%s: %s; want the stored revision and ReplicaSet taken as they are", w.member, w)
		}
	}
	set := must(c.Client.AppsV1().StatefulSets(p.ns).Get(ctx, "ss-legacy", metav1.GetOptions{}))
	if set.Status.CurrentRevision != rev.Name || set.Status.UpdateRevision != rev.Name {
		t.Errorf("ss-legacy revisions %s → %s, want %s as stored", set.Status.CurrentRevision, set.Status.UpdateRevision, rev.Name)
	}
	rs := must(c.Client.AppsV1().ReplicaSets(p.ns).Get(ctx, "d-legacy-5d8f7", metav1.GetOptions{}))
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.Name != "d-legacy" || rs.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("d-legacy-5d8f7 owner %v revision %q, want adopted by d-legacy as revision 1", ref, rs.Annotations["deployment.kubernetes.io/revision"])
	}
	return stopKroll
}

// olderEncoding is a StatefulSet revision's data as an older apiserver wrote it: the
// template's metadata with "creationTimestamp":null, and without the fields defaulted
// since (schedulerName, a container's terminationMessagePolicy and imagePullPolicy).
func olderEncoding(t *testing.T, data []byte) []byte {
	var patch map[string]map[string]map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		t.Fatal(err)
	}
	tmpl := patch["spec"]["template"]
	tmpl["metadata"].(map[string]any)["creationTimestamp"] = nil
	spec := tmpl["spec"].(map[string]any)
	delete(spec, "schedulerName")
	for _, c := range spec["containers"].([]any) {
		delete(c.(map[string]any), "terminationMessagePolicy")
		delete(c.(map[string]any), "imagePullPolicy")
	}
	out, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) == string(data) {
		t.Fatal("the older encoding should differ in its bytes")
	}
	return out
}

// checkLegacyDryRun asserts the dry run before kroll takes the older serializations
// over: exit 0, and writes for d-legacy alone, in flight (a Deployment whose status
// describes no generation yet), each an update or patch of an object that exists (the
// ReplicaSet's adoption, revision annotations, the Deployment's status: what the
// ledger then sees kroll write), none a create or delete, none to a pod or a
// ControllerRevision.
func checkLegacyDryRun(t *testing.T, ns string, r managerRun, report dryRunReport) {
	t.Helper()
	if r.code != 0 || !strings.Contains(r.stdout, "dry run: no writes beyond in-flight rollouts' next steps") {
		t.Errorf("exit %d, want 0 with the no-writes summary", r.code)
	}
	if len(report.unattributed) > 0 {
		t.Errorf("writes owned by no workload: %v", report.unattributed)
	}
	for _, w := range report.workloads {
		if w.String() != "Deployment "+ns+"/d-legacy" || !w.inFlight {
			t.Errorf("writes for %s (in flight: %v), want only for Deployment %s/d-legacy, in flight: %v", w, w.inFlight, ns, w.writes)
			continue
		}
		for _, line := range w.writes {
			verb, rest, _ := strings.Cut(line, " ")
			kind, _, _ := strings.Cut(rest, " ")
			if verb == "create" || verb == "delete" || kind == "Pod" || kind == "ControllerRevision" {
				t.Errorf("d-legacy: %q; want the stored ReplicaSet adopted, nothing made, removed or written to a pod", line)
			}
		}
	}
}
