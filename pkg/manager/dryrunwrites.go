package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kroll-dev/kroll/pkg/metrics"
)

// refusedWrite is one distinct write the controllers tried in a dry run.
type refusedWrite struct {
	// Verb is create, update, patch or delete; Kind the object's (Pod); Namespace and
	// Name the object's, Name being "<generateName>…" for a create that lets the server
	// name it; Subresource "status" for a status write.
	Verb, Kind, Namespace, Name, Subresource string
	// Owners are the object's owner references: the body's for a create, the live
	// object's otherwise.
	Owners []metav1.OwnerReference
	// Why is the one-line reason (writeWhy).
	Why string
	// Attempts counts how often the controllers tried it (refusals bring them back).
	Attempts int
}

// writeRecorder is the dry run's transport: reads (GET, and so lists and watches) go
// to the API server; every other request is answered here and never sent. A workload
// write is recorded, deduplicated, and refused with 403 Forbidden: the controller
// sees an API error, as from an admission webhook that refuses, and requeues the
// workload with its rate limiter's back-off (5ms, 10ms, … doubling), so a write
// retried for the minute of a dry run is tried some fifteen times, not thousands.
// An event is answered as recorded: refused, client-go's recorder would retry each one
// twelve times ten seconds apart, holding up the events after it.
type writeRecorder struct {
	mu     sync.Mutex
	writes map[string]*refusedWrite
	order  []string
	events int
	// unchanged counts the updates and patches answered as done because they would
	// change nothing (unchangedWrite).
	unchanged int
	last      time.Time
}

func newWriteRecorder() *writeRecorder { return &writeRecorder{writes: map[string]*refusedWrite{}} }

// kinds maps the resources kroll's controllers write to their kinds.
var kinds = map[string]string{
	"pods": "Pod", "replicasets": "ReplicaSet", "deployments": "Deployment", "statefulsets": "StatefulSet",
	"daemonsets": "DaemonSet", "replicationcontrollers": "ReplicationController",
	"controllerrevisions": "ControllerRevision", "persistentvolumeclaims": "PersistentVolumeClaim", "events": "Event",
}

func kindOf(resource string) string {
	if k, ok := kinds[resource]; ok {
		return k
	}
	return resource
}

// wrap is the rest.Config wrapper (rest.Config.Wrap) that puts the recorder in front
// of next.
func (r *writeRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet || req.Method == http.MethodHead {
			return next.RoundTrip(req)
		}
		return r.refuse(req, next)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (r *writeRecorder) refuse(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	info := metrics.RequestOf(req.Method, req.URL)
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	namespace, name := namespaceName(req.URL.Path, info)
	if info.Resource == "events" {
		r.mu.Lock()
		r.events++
		r.mu.Unlock()
		return eventRecorded(req, body, namespace, name), nil
	}
	w := refusedWrite{Verb: info.Verb, Kind: kindOf(info.Resource), Namespace: namespace, Name: name, Subresource: info.Subresource}
	var changes []fieldChange
	var live []byte  // the object the write is for, as the server has it
	applied := false // the write was applied to live, and changes worked out
	switch info.Verb {
	case "create":
		var obj metav1.PartialObjectMetadata
		if json.Unmarshal(toJSON(body), &obj) == nil {
			w.Owners = obj.OwnerReferences
			switch {
			case obj.Name != "":
				w.Name = obj.Name
			case obj.GenerateName != "":
				w.Name = obj.GenerateName + "…"
			}
			if obj.Namespace != "" {
				w.Namespace = obj.Namespace
			}
		}
	default:
		var err error
		live, err = r.live(req, next, info)
		if err != nil {
			return nil, err
		}
		if live != nil {
			var meta metav1.PartialObjectMetadata
			if json.Unmarshal(live, &meta) == nil {
				w.Owners = meta.OwnerReferences
			}
			if info.Verb != "delete" {
				next, err := afterWrite(live, body, req.Method, req.Header.Get("Content-Type"), w.Kind)
				if err == nil {
					applied = true
					changes = changesOf(live, next, info.Subresource)
					var after metav1.PartialObjectMetadata
					if info.Subresource == "" && json.Unmarshal(next, &after) == nil {
						w.Owners = ownersOfWrite(w.Owners, after.OwnerReferences)
					}
				}
			}
		}
	}
	if unchangedWrite(info.Verb, applied, changes) {
		// Sent, the write would succeed and leave the object as it is: answered so
		// (with the object as it is), counted, and not listed.
		r.mu.Lock()
		r.unchanged++
		r.mu.Unlock()
		return jsonResponse(req, http.StatusOK, json.RawMessage(live)), nil
	}
	w.Why = writeWhy(w.Verb, w.Kind, w.Name, metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: w.Owners}), w.Namespace, changes)
	r.record(w)
	status := apierrors.NewForbidden(schema.GroupResource{Group: info.Group, Resource: info.Resource}, name,
		errors.New(refusal)).ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return jsonResponse(req, http.StatusForbidden, status), nil
}

// record adds w, or counts one more attempt of the same write.
func (r *writeRecorder) record(w refusedWrite) {
	key := strings.Join([]string{w.Verb, w.Kind, w.Namespace, w.Name, w.Subresource, w.Why}, "\x00")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = time.Now()
	if have, ok := r.writes[key]; ok {
		have.Attempts++
		return
	}
	w.Attempts = 1
	r.writes[key] = &w
	r.order = append(r.order, key)
}

// snapshot returns the distinct writes in the order first tried, the events answered,
// and when the last write was tried.
func (r *writeRecorder) snapshot() (writes []refusedWrite, events int, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.order {
		writes = append(writes, *r.writes[k])
	}
	return writes, r.events, r.last
}

// unchangedWrites is how many writes were answered as changing nothing.
func (r *writeRecorder) unchangedWrites() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unchanged
}

// namespaceName reads the namespace and object name from an API path:
// /apis/apps/v1/namespaces/NS/replicasets/NAME[/status].
func namespaceName(path string, info metrics.Request) (namespace, name string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && namespace == "" && parts[i+1] != "" && i+2 < len(parts) {
			namespace = parts[i+1]
		}
		if parts[i] == info.Resource && name == "" {
			name = parts[i+1]
		}
	}
	return namespace, name
}

// live GETs the object a write is for, without its subresource (a read-only role
// grants get on deployments, not on deployments/status). nil when it is gone.
func (r *writeRecorder) live(req *http.Request, next http.RoundTripper, info metrics.Request) ([]byte, error) {
	get := req.Clone(req.Context())
	get.Method, get.Body, get.ContentLength, get.GetBody = http.MethodGet, nil, 0, nil
	get.Header.Del("Content-Type")
	get.Header.Set("Accept", "application/json")
	u := *req.URL
	u.RawQuery = ""
	if info.Subresource != "" {
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/"+info.Subresource)
	}
	get.URL = &u
	resp, err := next.RoundTrip(get)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, err
	}
	return b, nil
}

// toJSON is body as JSON: client-go may send protobuf.
func toJSON(body []byte) []byte {
	if len(body) > 0 && body[0] == '{' {
		return body
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return body
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return b
}

// afterWrite is the object as the write would leave it: an update's body, or live
// with the patch applied by its type.
func afterWrite(live, body []byte, method, contentType, kind string) ([]byte, error) {
	if method == http.MethodPut {
		return toJSON(body), nil
	}
	switch types.PatchType(strings.Split(contentType, ";")[0]) {
	case types.StrategicMergePatchType:
		obj, err := scheme.Scheme.New(schema.GroupVersionKind{Group: groupOf(kind), Version: "v1", Kind: kind})
		if err != nil {
			return nil, err
		}
		return strategicpatch.StrategicMergePatch(live, body, obj)
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, err
		}
		return p.Apply(live)
	default: // merge patch; an apply patch read as one
		return jsonpatch.MergePatch(live, body)
	}
}

func groupOf(kind string) string {
	switch kind {
	case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision":
		return "apps"
	}
	return ""
}

// changesOf is what a write changes: of a status write only the status (the server
// keeps the rest), of any other only the rest (the server keeps the status).
func changesOf(live, next []byte, subresource string) []fieldChange {
	var a, b map[string]any
	if json.Unmarshal(live, &a) != nil || json.Unmarshal(next, &b) != nil {
		return nil
	}
	if subresource == "status" {
		return fieldChanges(map[string]any{"status": a["status"]}, map[string]any{"status": b["status"]})
	}
	delete(a, "status")
	delete(b, "status")
	return fieldChanges(a, b)
}

// eventRecorded answers an event write as the server would have: the event back.
func eventRecorded(req *http.Request, body []byte, namespace, name string) *http.Response {
	var ev map[string]any
	if req.Method != http.MethodPost || json.Unmarshal(toJSON(body), &ev) != nil {
		ev = map[string]any{"metadata": map[string]any{"name": name, "namespace": namespace}}
	}
	ev["kind"], ev["apiVersion"] = "Event", "v1"
	if strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
		ev["apiVersion"] = "events.k8s.io/v1"
	}
	code := http.StatusOK
	if req.Method == http.MethodPost {
		code = http.StatusCreated
	}
	return jsonResponse(req, code, ev)
}

func jsonResponse(req *http.Request, code int, v any) *http.Response {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q}`, err.Error()))
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)), Request: req}
}
