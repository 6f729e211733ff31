package cli

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest/fake"
	"k8s.io/kubectl/pkg/cmd/rollout"
	cmdtesting "k8s.io/kubectl/pkg/cmd/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/scheme"

	"github.com/kroll-dev/kroll/pkg/failure"
)

func pausedStatefulSet(partition int32, annotations map[string]string) *appsv1.StatefulSet {
	replicas := int32(5)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}},
	}
}

func daemonSet(annotations map[string]string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", Annotations: annotations}}
}

// decode reads what a pauser or resumer returned.
func decode(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	obj, err := runtime.Decode(scheme.Codecs.UniversalDecoder(appsv1.SchemeGroupVersion), data)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestPauseResumeObject(t *testing.T) {
	onFailure := map[string]string{failure.PausedOnFailureAnnotation: "web-86c7f9d5b8", failure.PartitionBeforePauseAnnotation: "1"}
	tests := []struct {
		name    string
		do      func(runtime.Object) ([]byte, error)
		obj     runtime.Object
		wantErr string
		check   func(t *testing.T, obj runtime.Object)
	}{
		{"a StatefulSet paused on failure at partition 5 gets partition 1 back; the record of the failure stays", resumeObject, pausedStatefulSet(5, onFailure), "",
			func(t *testing.T, obj runtime.Object) {
				set := obj.(*appsv1.StatefulSet)
				if p := *set.Spec.UpdateStrategy.RollingUpdate.Partition; p != 1 {
					t.Errorf("partition %d, want 1", p)
				}
				if _, ok := set.Annotations[failure.PartitionBeforePauseAnnotation]; ok {
					t.Errorf("%s is still there", failure.PartitionBeforePauseAnnotation)
				}
				if set.Annotations[failure.PausedOnFailureAnnotation] != "web-86c7f9d5b8" {
					t.Errorf("%s is gone: the controller would pause the failed revision again", failure.PausedOnFailureAnnotation)
				}
			}},
		{"a StatefulSet kroll did not pause: kubectl's words", resumeObject, pausedStatefulSet(2, nil), "is not paused", nil},
		{"a StatefulSet with a bad record: the one line says what to do", resumeObject, pausedStatefulSet(5, map[string]string{failure.PartitionBeforePauseAnnotation: "-1"}),
			`has kroll.dev/partition-before-pause="-1", which is not a partition (a whole number of at least 0): set spec.updateStrategy.rollingUpdate.partition yourself and remove the annotation`, nil},
		{"a paused DaemonSet loses kroll.dev/paused and keeps its record", resumeObject, daemonSet(map[string]string{failure.PausedAnnotation: "true", failure.PausedOnFailureAnnotation: "agent-6c4b8d7f9"}), "",
			func(t *testing.T, obj runtime.Object) {
				ds := obj.(*appsv1.DaemonSet)
				if _, ok := ds.Annotations[failure.PausedAnnotation]; ok || ds.Annotations[failure.PausedOnFailureAnnotation] == "" {
					t.Errorf("annotations %v, want %s gone and %s kept", ds.Annotations, failure.PausedAnnotation, failure.PausedOnFailureAnnotation)
				}
			}},
		{"a DaemonSet not paused", resumeObject, daemonSet(nil), "is not paused", nil},
		{"pausing a DaemonSet sets kroll.dev/paused", pauseObject, daemonSet(nil), "",
			func(t *testing.T, obj runtime.Object) {
				if v := obj.(*appsv1.DaemonSet).Annotations[failure.PausedAnnotation]; v != "true" {
					t.Errorf("%s=%q, want \"true\"", failure.PausedAnnotation, v)
				}
			}},
		{"pausing a paused DaemonSet: kubectl's words", pauseObject, daemonSet(map[string]string{failure.PausedAnnotation: "true"}), "is already paused", nil},
		{"a Deployment is kubectl's", resumeObject, &appsv1.Deployment{}, "is not paused", nil},
		{"pausing a StatefulSet is kubectl's answer", pauseObject, pausedStatefulSet(0, nil), "pausing is not supported", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := tt.do(tt.obj)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("err %q, want %q", got, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, decode(t, data))
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// `kroll rollout resume statefulset/web` on a StatefulSet kroll paused on failure is
// kubectl's command: one GET, one PATCH carrying both the partition and the record's
// removal, and kubectl's line.
func TestRolloutResume_statefulSetOneWrite(t *testing.T) {
	set := pausedStatefulSet(5, map[string]string{failure.PausedOnFailureAnnotation: "web-86c7f9d5b8", failure.PartitionBeforePauseAnnotation: "0"})
	codec := scheme.Codecs.LegacyCodec(appsv1.SchemeGroupVersion)
	tf := cmdtesting.NewTestFactory().WithNamespace("default")
	defer tf.Cleanup()
	var patches []string
	tf.Client = &fake.RESTClient{
		GroupVersion:         appsv1.SchemeGroupVersion,
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: fake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path != "/namespaces/default/statefulsets/web" || (req.Method != http.MethodGet && req.Method != http.MethodPatch) {
				t.Errorf("unexpected %s %s", req.Method, req.URL.Path)
				return &http.Response{StatusCode: http.StatusNotFound, Header: cmdtesting.DefaultHeader(), Body: io.NopCloser(strings.NewReader(""))}, nil
			}
			if req.Method == http.MethodPatch {
				body, _ := io.ReadAll(req.Body)
				patches = append(patches, string(body))
			}
			return &http.Response{StatusCode: http.StatusOK, Header: cmdtesting.DefaultHeader(),
				Body: io.NopCloser(bytes.NewReader([]byte(runtime.EncodeOrDie(codec, set))))}, nil
		}),
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	k := &kubectlVerbs{factory: tf, streams: streams}
	cmd := k.rollout(rollout.NewCmdRollout("kroll", tf, streams))
	cmd.SetArgs([]string{"resume", "statefulset/web"})
	var fatal string
	cmdutil.BehaviorOnFatal(func(msg string, _ int) { fatal = msg })
	defer cmdutil.DefaultBehaviorOnFatal()
	if err := cmd.Execute(); err != nil || fatal != "" {
		t.Fatalf("resume: %v %s", err, fatal)
	}
	want := `{"metadata":{"annotations":{"kroll.dev/partition-before-pause":null}},"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q, want one: %s", patches, want)
	}
	if got := out.String(); got != "statefulset.apps/web resumed\n" {
		t.Errorf("output %q, want kubectl's line", got)
	}
}
