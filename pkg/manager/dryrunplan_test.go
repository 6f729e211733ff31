package manager

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func controlledBy(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
}

func TestAttribute(t *testing.T) {
	caches := map[string][]metav1.OwnerReference{
		"ReplicaSet/web-7d9c": controlledBy("Deployment", "web"),
		"ReplicaSet/solo":     nil,
		"StatefulSet/db":      nil,
	}
	lookup := func(kind, _, name string) ([]metav1.OwnerReference, bool) {
		o, ok := caches[kind+"/"+name]
		return o, ok
	}
	cases := []struct {
		name, kind, object string
		owners             []metav1.OwnerReference
		want               string
	}{
		{"a pod to its ReplicaSet to its Deployment", "Pod", "web-7d9c-x", controlledBy("ReplicaSet", "web-7d9c"), "Deployment ns/web"},
		{"a Deployment's ReplicaSet is the Deployment's", "ReplicaSet", "web-7d9c", controlledBy("Deployment", "web"), "Deployment ns/web"},
		{"a bare ReplicaSet's pod is the ReplicaSet's", "Pod", "solo-x", controlledBy("ReplicaSet", "solo"), "ReplicaSet ns/solo"},
		{"a bare ReplicaSet is its own", "ReplicaSet", "solo", nil, "ReplicaSet ns/solo"},
		{"a ControllerRevision to its StatefulSet", "ControllerRevision", "db-5f8", controlledBy("StatefulSet", "db"), "StatefulSet ns/db"},
		{"the workload itself", "DaemonSet", "logs", nil, "DaemonSet ns/logs"},
		{"a pod of a ReplicaSet gone from the caches is still the ReplicaSet's", "Pod", "gone-x", controlledBy("ReplicaSet", "gone"), "ReplicaSet ns/gone"},
		{"an orphaned pod is no workload's", "Pod", "stray", nil, ""},
		{"a claim without owner is no workload's", "PersistentVolumeClaim", "www-db-0", nil, ""},
		{"a pod owned without controller is no workload's", "Pod", "x", []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "solo"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ok := attribute(c.kind, "ns", c.object, c.owners, lookup)
			got := ""
			if ok {
				got = w.String()
			}
			if got != c.want {
				t.Errorf("attribute(%s %s) = %q, want %q", c.kind, c.object, got, c.want)
			}
		})
	}
}

func TestOwnersOfWrite(t *testing.T) {
	web, solo := controlledBy("Deployment", "web"), controlledBy("ReplicaSet", "solo")
	notController := []metav1.OwnerReference{{Kind: "Deployment", Name: "web"}}
	cases := []struct {
		name       string
		live, next []metav1.OwnerReference
		want       string
	}{
		{"an adoption is the adopter's", nil, web, "Deployment/web"},
		{"an adoption of an object owned without controller is the adopter's", notController, append(notController[:1:1], web...), "Deployment/web"},
		{"a release is the releasing controller's", web, nil, "Deployment/web"},
		{"a write that keeps the controller is its", web, web, "Deployment/web"},
		{"a change of controller is the one it has now", solo, web, "ReplicaSet/solo"},
		{"an orphan written as an orphan stays no one's", nil, notController, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: ownersOfWrite(c.live, c.next)}); ref != nil {
				got = ref.Kind + "/" + ref.Name
			}
			if got != c.want {
				t.Errorf("ownersOfWrite(%v, %v) is controlled by %q, want %q", c.live, c.next, got, c.want)
			}
		})
	}
}

func TestRolloutInFlight(t *testing.T) {
	three := int32(3)
	deploy := func(gen, observed int64, updated, total, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &three},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total, AvailableReplicas: available}}
	}
	set := func(current, update string, updated, ready int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: &three}, Status: appsv1.StatefulSetStatus{
			CurrentRevision: current, UpdateRevision: update, UpdatedReplicas: updated, ReadyReplicas: ready, Replicas: 3}}
	}
	daemons := func(desired, updated, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberAvailable: available}}
	}
	cases := []struct {
		name string
		obj  runtime.Object
		want bool
	}{
		{"Deployment complete: 3 of 3 updated and available", deploy(2, 2, 3, 3, 3), false},
		{"Deployment mid-rollout: 2 of 3 updated", deploy(2, 2, 2, 3, 3), true},
		{"Deployment surged: 4 pods for 3", deploy(2, 2, 3, 4, 3), true},
		{"Deployment with a pod unavailable", deploy(2, 2, 3, 3, 2), true},
		{"Deployment whose new generation is not observed yet", deploy(3, 2, 3, 3, 3), true},
		{"StatefulSet complete", set("db-1", "db-1", 3, 3), false},
		{"StatefulSet partitioned: revisions differ", set("db-1", "db-2", 1, 3), true},
		{"StatefulSet updated but a pod not ready", set("db-2", "db-2", 3, 2), true},
		{"DaemonSet complete on 4 nodes", daemons(4, 4, 4), false},
		{"DaemonSet mid-RollingUpdate: 3 of 4 updated", daemons(4, 3, 4), true},
		{"DaemonSet with a pod unavailable", daemons(4, 4, 3), true},
		{"a ReplicaSet of its own has no rollout", &appsv1.ReplicaSet{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := rolloutInFlight(c.obj); got != c.want {
				t.Errorf("rolloutInFlight = %v, want %v", got, c.want)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFieldChangesAndWhy(t *testing.T) {
	// unchanged: the write would leave the object as it is, and is left out of the list.
	const unchanged = "(left out: changes nothing)"
	cases := []struct {
		name, verb, live, next string
		want                   string
	}{
		{"a status count", "update", `{"status":{"readyReplicas":2,"replicas":3}}`, `{"status":{"readyReplicas":3,"replicas":3}}`,
			"status.readyReplicas 2 → 3"},
		{"a field appears", "patch", `{"spec":{}}`, `{"spec":{"replicas":1}}`, "spec.replicas <none> → 1"},
		{"a condition's reason, keyed by type", "update",
			`{"status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","reason":"ReplicaSetUpdated"}]}}`,
			`{"status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","reason":"NewReplicaSetAvailable"}]}}`,
			"status.conditions[Progressing].reason ReplicaSetUpdated → NewReplicaSetAvailable"},
		{"the fields the cache drops or the server sets are not changes", "update",
			`{"metadata":{"resourceVersion":"5","managedFields":[{"manager":"x"}],"labels":{"a":"1"}}}`,
			`{"metadata":{"resourceVersion":"4","labels":{"a":"1"}}}`, unchanged},
		{"more than three fields", "update", `{"a":1,"b":1,"c":1,"d":1,"e":1}`, `{"a":2,"b":2,"c":2,"d":2,"e":2}`,
			"a 1 → 2, b 1 → 2, c 1 → 2, +2 more fields"},
		{"a condition's times are not changes; its reason is", "update",
			`{"status":{"conditions":[{"type":"Progressing","reason":"A","lastUpdateTime":"1"}]}}`,
			`{"status":{"conditions":[{"type":"Progressing","reason":"B","lastUpdateTime":"2"}]}}`, "status.conditions[Progressing].reason A → B"},
		{"a condition that reports the dry run's own refusal is not a change", "update", `{"status":{"replicas":1}}`,
			`{"status":{"replicas":1,"conditions":[{"type":"ReplicaFailure","message":"pods \"x\" is forbidden: ` + refusal + `"}]}}`,
			unchanged},
		{"a condition added, shown without its times", "update", `{"status":{}}`,
			`{"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"t"}]}}`,
			`status.conditions[Available] <none> → {"status":"True","type":"Available"}`},
		{"a list without keys as a whole", "patch", `{"spec":{"args":["a"]}}`, `{"spec":{"args":["a","b"]}}`, `spec.args ["a"] → ["a","b"]`},
		{"an owner reference added", "patch", `{"metadata":{}}`, `{"metadata":{"ownerReferences":[{"kind":"ReplicaSet","name":"solo"}]}}`,
			"metadata.ownerReferences[solo] <none> → {\"kind\":\"ReplicaSet\",\"name\":\"solo\"}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changes := fieldChanges(decode(t, c.live), decode(t, c.next))
			if left := unchangedWrite(c.verb, true, changes); left != (c.want == unchanged) {
				t.Fatalf("unchangedWrite = %v (changes %v), want %v", left, changes, c.want == unchanged)
			}
			if c.want == unchanged {
				return
			}
			got := writeWhy(c.verb, "ReplicaSet", "solo", nil, "ns", changes)
			if got != c.want {
				t.Errorf("why = %q\nwant  %q", got, c.want)
			}
		})
	}
	owner := &controlledBy("ReplicaSet", "solo")[0]
	if got, want := writeWhy("create", "Pod", "solo-…", owner, "ns", nil), "new Pod solo-… for ReplicaSet ns/solo"; got != want {
		t.Errorf("create: %q, want %q", got, want)
	}
	if got, want := writeWhy("delete", "Pod", "solo-x", nil, "ns", nil), "remove Pod ns/solo-x"; got != want {
		t.Errorf("delete: %q, want %q", got, want)
	}
	for _, c := range []struct {
		name, verb string
		applied    bool
		want       bool
	}{
		{"an update that changes nothing, worked out against the live object: left out", "update", true, true},
		{"a patch that changes nothing: left out", "patch", true, true},
		{"an update of an object gone (not worked out): listed", "update", false, false},
		{"a delete changes something whatever its fields", "delete", true, false},
		{"a create changes something", "create", true, false},
	} {
		if got := unchangedWrite(c.verb, c.applied, nil); got != c.want {
			t.Errorf("%s: unchangedWrite = %v, want %v", c.name, got, c.want)
		}
	}
	if got, want := writeWhy("update", "ReplicaSet", "solo", nil, "ns", nil), "fields not known (the live object could not be read, or the write applied to it)"; got != want {
		t.Errorf("update not worked out: %q, want %q", got, want)
	}
}

// The recorder answers reads from the server and writes itself: a status update is
// refused with 403, never sent, recorded once however often it is retried, and said
// as the fields it changes against the live object.
func TestWriteRecorder(t *testing.T) {
	var sent []string
	live := `{"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"name":"solo","namespace":"ns"},"spec":{"replicas":3},"status":{"replicas":2,"readyReplicas":2}}`
	server := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		sent = append(sent, req.Method+" "+req.URL.Path)
		return jsonResponse(req, http.StatusOK, json.RawMessage(live)), nil
	})
	rec := newWriteRecorder()
	rt := rec.wrap(server)
	do := func(method, path, contentType, body string) *http.Response {
		u, _ := url.Parse("https://api" + path)
		req := &http.Request{Method: method, URL: u, Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(body))}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	do(http.MethodGet, "/apis/apps/v1/namespaces/ns/replicasets", "", "")
	update := strings.Replace(live, `"readyReplicas":2`, `"readyReplicas":3`, 1)
	for i := 0; i < 3; i++ {
		if resp := do(http.MethodPut, "/apis/apps/v1/namespaces/ns/replicasets/solo/status", "application/json", update); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status update answered %d, want 403", resp.StatusCode)
		}
	}
	// A status update that restates the status is answered as done, with the object
	// as it is, and left out.
	if resp := do(http.MethodPut, "/apis/apps/v1/namespaces/ns/replicasets/solo/status", "application/json", live); resp.StatusCode != http.StatusOK {
		t.Errorf("an update that changes nothing answered %d, want 200", resp.StatusCode)
	} else if body, _ := io.ReadAll(resp.Body); string(body) != live {
		t.Errorf("an update that changes nothing answered %s, want the live object", body)
	}
	do(http.MethodPatch, "/apis/apps/v1/namespaces/ns/replicasets/solo", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	do(http.MethodPatch, "/apis/apps/v1/namespaces/ns/replicasets/solo", "application/merge-patch+json", `{"spec":{"replicas":4}}`)
	do(http.MethodPatch, "/apis/apps/v1/namespaces/ns/replicasets/solo", "application/strategic-merge-patch+json",
		`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u1","controller":true}]}}`)
	do(http.MethodPost, "/api/v1/namespaces/ns/pods", "application/json",
		`{"metadata":{"generateName":"solo-","ownerReferences":[{"kind":"ReplicaSet","name":"solo","controller":true}]}}`)
	if resp := do(http.MethodPost, "/api/v1/namespaces/ns/events", "application/json", `{"metadata":{"name":"e"},"reason":"SuccessfulCreate"}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("event create answered %d, want 201 (recorded, so the recorder does not retry)", resp.StatusCode)
	}
	for _, s := range sent {
		if !strings.HasPrefix(s, "GET ") {
			t.Errorf("sent %s to the server: only reads may be", s)
		}
	}
	writes, events, _ := rec.snapshot()
	var got bytes.Buffer
	for _, w := range writes {
		owner := ""
		if ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: w.Owners}); ref != nil {
			owner = " (of " + ref.Kind + " " + ref.Name + ")"
		}
		got.WriteString(w.Verb + " " + w.Kind + " " + w.Namespace + "/" + w.Name + " " + w.Subresource + ": " + w.Why + owner + "\n")
	}
	want := "update ReplicaSet ns/solo status: status.readyReplicas 2 → 3\n" +
		"patch ReplicaSet ns/solo : spec.replicas 3 → 4\n" +
		"patch ReplicaSet ns/solo : metadata.ownerReferences[web] <none> → {\"apiVersion\":\"apps/v1\",\"controller\":true,\"kind\":\"Deploym... (of Deployment web)\n" +
		"create Pod ns/solo-… : new Pod solo-… for ReplicaSet ns/solo (of ReplicaSet solo)\n"
	if got.String() != want || events != 1 || writes[0].Attempts != 3 || rec.unchangedWrites() != 2 {
		t.Errorf("recorded (events %d, attempts of the first %d, %d unchanged left out):\n%s\nwant (events 1, attempts 3, 2 unchanged):\n%s",
			events, writes[0].Attempts, rec.unchangedWrites(), got.String(), want)
	}
}

func TestDryRunVerdict(t *testing.T) {
	w := func(kind, name string, inFlight bool) WorkloadWrites {
		return WorkloadWrites{Workload: WorkloadRef{kind, "ns", name}, InFlight: inFlight,
			Writes: []refusedWrite{{Verb: "patch", Kind: "ReplicaSet", Namespace: "ns", Name: name, Why: "spec.replicas 2 → 3"}}}
	}
	cases := []struct {
		name       string
		result     DryRunResult
		unexpected int
		summary    string
	}{
		{"nothing to write", DryRunResult{Synced: 4, Idle: true, Events: 2}, 0, "dry run: no writes beyond in-flight rollouts' next steps (0 in flight; 4 workloads synced in 0s)"},
		{"only an in-flight rollout's next step", DryRunResult{Synced: 4, Idle: true, Workloads: []WorkloadWrites{w("Deployment", "web", true)}}, 0,
			"dry run: no writes beyond in-flight rollouts' next steps (1 in flight; 4 workloads synced in 0s)"},
		{"a complete workload written", DryRunResult{Synced: 4, Idle: true, Workloads: []WorkloadWrites{w("Deployment", "web", true), w("ReplicaSet", "solo", false)}}, 1,
			"dry run: kroll would make 1 writes beyond in-flight rollouts' next steps (ReplicaSet ns/solo; 4 workloads synced in 0s): review them before switching"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			summary := c.result.Print(&out)
			if got := c.result.Unexpected(); got != c.unexpected || summary != c.summary {
				t.Errorf("unexpected %d, summary %q\nwant %d, %q", got, summary, c.unexpected, c.summary)
			}
			if c.result.Events > 0 && !strings.Contains(out.String(), "events are not workload writes") {
				t.Errorf("report does not say events were left out:\n%s", out.String())
			}
		})
	}
}
