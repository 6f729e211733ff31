package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/admission"
	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// Given the embedded cluster, which installs kroll's ValidatingAdmissionPolicy, when
// every value of the settings table (pkg/admission.Values) is written on each kind it
// holds for — applied as a new object (server-side apply) and annotated onto an existing
// one (a merge patch, as `kubectl annotate` sends), both dry-run — then the API server
// refuses each invalid value with exactly the line kroll's controllers report for it
// (admission.Problems) and accepts each valid one; `kroll annotate` and `kroll apply`
// (kubectl's own command code) print that line and fail; a namespace labelled
// kroll.dev/admission-policy=off is not checked; and an object that carried a bad value
// before is not refused when something else about it changes (kroll's controllers
// writing their records), only when the bad setting itself is written again.
func TestAdmissionPolicy(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, clustertest.WithWorkloadControllers(cluster.WorkloadControllersNone), clustertest.WithNodes(1))
	ctx := context.Background()
	s := newScene(t, c, "admission", cluster.WorkloadControllersNone)
	for _, kind := range admission.Kinds {
		if err := writeWorkload(ctx, c.Client, s.ns, kind, "annotated", types.ApplyPatchType, manifestJSON(t, kind, "annotated", nil), false); err != nil {
			t.Fatalf("create %s: %v", kind, err)
		}
	}

	t.Run("table", func(t *testing.T) {
		valid, invalid := 0, 0
		for _, v := range admission.Values {
			for _, kind := range v.KindsOf() {
				ann := v.Annotations()
				name := kind + " " + describe(ann)
				want := strings.Join(admission.Problems(kind, ann), "; ")
				patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
				verdicts := map[string]error{
					"apply":    writeWorkload(ctx, c.Client, s.ns, kind, "applied", types.ApplyPatchType, manifestJSON(t, kind, "applied", ann), true),
					"annotate": writeWorkload(ctx, c.Client, s.ns, kind, "annotated", types.MergePatchType, patch, true),
				}
				for verb, err := range verdicts {
					checkVerdict(t, name+" by "+verb, v.Valid, want, err)
				}
				if v.Valid {
					valid++
				} else {
					invalid++
				}
			}
		}
		t.Logf("%d valid and %d invalid (kind, value) pairs, each applied and annotated", valid, invalid)
	})

	t.Run("kroll annotate and kroll apply", func(t *testing.T) {
		bin := krollBinary(t)
		dir := t.TempDir()
		done := map[string]bool{}
		for i, v := range admission.Values {
			// One valid and one invalid value of each setting, written on a Deployment.
			kinds := v.KindsOf()
			if done[v.Key+strconv.FormatBool(v.Valid)] || v.With != nil || kinds[0] != admission.Deployment || strings.ContainsAny(v.Value, "\n\"\\") {
				continue
			}
			done[v.Key+strconv.FormatBool(v.Valid)] = true
			want := strings.Join(admission.Problems(admission.Deployment, v.Annotations()), "; ")
			file := filepath.Join(dir, fmt.Sprintf("web-%d.json", i))
			if err := os.WriteFile(file, manifestJSON(t, admission.Deployment, fmt.Sprintf("web-%d", i), v.Annotations()), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"annotate", "--overwrite", "deployment/annotated", v.Key + "=" + v.Value},
				{"apply", "-f", file},
			} {
				args = append(args, "--kubeconfig", c.KubeconfigPath, "-n", s.ns, "--dry-run=server")
				code, stderr := runKroll(t, bin, args...)
				name := fmt.Sprintf("kroll %s %s=%q", args[0], v.Key, v.Value)
				switch {
				case v.Valid && code != 0:
					t.Errorf("%s: exit %d, want 0 (a valid value); stderr:\n%s", name, code, stderr)
				case !v.Valid && code == 0:
					t.Errorf("%s: exit 0; want it refused with %q", name, want)
				case !v.Valid && !strings.Contains(stderr, want):
					t.Errorf("%s: exit %d, stderr does not hold the controllers' line %q:\n%s", name, code, want, stderr)
				case v.Key == failure.OnFailureAnnotation && !v.Valid:
					t.Logf("%s: exit %d: %s", name, code, stderr)
				}
			}
		}
		if len(done) != 2*len(admission.Settings) {
			t.Errorf("%d settings and verdicts tried, want a valid and an invalid value of each of %d settings", len(done), len(admission.Settings))
		}
	})

	// Where CEL cannot give the controllers' line (deploy/README.md lists them): a
	// duration beyond Go's 292 years is refused by the API server's own evaluation
	// error; a long list of steps within the evaluation's cost budget is checked as any.
	t.Run("limits", func(t *testing.T) {
		overflow := map[string]string{failure.ReadyTimeoutAnnotation: "9999999999h"}
		err := writeWorkload(ctx, c.Client, s.ns, admission.Deployment, "applied", types.ApplyPatchType, manifestJSON(t, admission.Deployment, "applied", overflow), true)
		if err == nil {
			t.Errorf("%s accepted, want it refused", describe(overflow))
		}
		t.Logf("%s: %v", describe(overflow), err)
		for _, n := range []int{50, 200, 500, 2000} {
			var steps []string
			for i := 1; i <= n; i++ {
				steps = append(steps, strconv.Itoa(i), "pause: 1s")
			}
			ann := map[string]string{"kroll.dev/rollout-steps": strings.Join(steps, ", ")}
			err := writeWorkload(ctx, c.Client, s.ns, admission.Deployment, "applied", types.ApplyPatchType, manifestJSON(t, admission.Deployment, "applied", ann), true)
			t.Logf("%d shares and %d pauses: %v", n, n, err)
			if n <= 200 && err != nil {
				t.Errorf("%d valid steps refused: %v", 2*n, err)
			}
		}
	})

	t.Run("bad value written before, and opted-out namespaces", func(t *testing.T) {
		ns := "admission-before"
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{admission.OptOutLabel: admission.OptOutValue}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bad := map[string]string{failure.OnFailureAnnotation: "Sometimes"}
		if err := writeWorkload(ctx, c.Client, ns, admission.Deployment, "web", types.ApplyPatchType, manifestJSON(t, admission.Deployment, "web", bad), false); err != nil {
			t.Fatalf("a bad value in an opted-out namespace was refused: %v", err)
		}
		// The namespace opts in again: the object now carries a value the policy refuses.
		if _, err := c.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+admission.OptOutLabel+`":null}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		again := []byte(`{"metadata":{"annotations":{"` + failure.OnFailureAnnotation + `":"Never"}}}`)
		want := `kroll.dev/on-failure="Never" is not valid: want Rollback, Pause or None`
		eventually(t, 30*time.Second, "the policy to check the namespace again", func(ctx context.Context) (bool, string) {
			err := writeWorkload(ctx, c.Client, ns, admission.Deployment, "web", types.MergePatchType, again, true)
			return apierrors.IsInvalid(err) && strings.Contains(err.Error(), want), fmt.Sprint(err)
		})
		// What kroll's controllers write on it is not refused: records, the spec, status.
		for what, patch := range map[string]string{
			"a record":     `{"metadata":{"annotations":{"` + failure.RolledBackFromAnnotation + `":"2"}}}`,
			"the replicas": `{"spec":{"replicas":3}}`,
		} {
			if err := writeWorkload(ctx, c.Client, ns, admission.Deployment, "web", types.MergePatchType, []byte(patch), false); err != nil {
				t.Errorf("writing %s on a Deployment that carried a bad value before was refused: %v", what, err)
			}
		}
		if _, err := c.Client.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`),
			metav1.PatchOptions{}, "status"); err != nil {
			t.Errorf("a status write was refused: %v", err)
		}
		// The bad value written again, or another: refused. Removed: accepted.
		for _, value := range []string{"Sometimes", "Always"} {
			patch := []byte(`{"metadata":{"annotations":{"` + failure.OnFailureAnnotation + `":"` + value + `"}}}`)
			err := writeWorkload(ctx, c.Client, ns, admission.Deployment, "web", types.MergePatchType, patch, true)
			if value == "Sometimes" && err != nil {
				t.Errorf("an unchanged bad value was refused: %v", err)
			}
			if value == "Always" && !apierrors.IsInvalid(err) {
				t.Errorf("a changed bad value was accepted: %v", err)
			}
		}
		if err := writeWorkload(ctx, c.Client, ns, admission.Deployment, "web", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+failure.OnFailureAnnotation+`":null}}}`), false); err != nil {
			t.Errorf("removing the bad value was refused: %v", err)
		}
	})
}

// checkVerdict checks the API server's answer to one write: nil for a valid value; for an
// invalid one, a refusal (422 Invalid) whose message holds want, the controllers' line.
func checkVerdict(t *testing.T, name string, valid bool, want string, err error) {
	t.Helper()
	switch {
	case valid && err != nil:
		t.Errorf("%s: refused, but the parsers accept it: %v", name, err)
	case !valid && err == nil:
		t.Errorf("%s: accepted; the parsers refuse it with %q", name, want)
	case !valid && !apierrors.IsInvalid(err):
		t.Errorf("%s: refused with %v, want 422 Invalid from the policy", name, err)
	case !valid && !strings.Contains(err.Error(), admission.PolicyName+"' denied request: "+want):
		t.Errorf("%s: refused with\n  %v\nwhich does not end in the controllers' line\n  %s", name, err, want)
	}
}

// describe is a row's annotations as one sorted, quoted line.
func describe(ann map[string]string) string {
	var parts []string
	for k, v := range ann {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// manifestJSON is a minimal apps/v1 workload of kind named name with annotations, as
// JSON (which kubectl apply reads as YAML).
func manifestJSON(t *testing.T, kind, name string, annotations map[string]string) []byte {
	t.Helper()
	labels := map[string]any{"app": name}
	spec := map[string]any{
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}},
		},
	}
	if kind == admission.StatefulSet {
		spec["serviceName"] = name
	}
	meta := map[string]any{"name": name}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeWorkload patches (or with ApplyPatchType, applies) a workload of kind, dry-run
// (nothing stored) when asked.
func writeWorkload(ctx context.Context, client kubernetes.Interface, ns, kind, name string, pt types.PatchType, data []byte, dryRun bool) error {
	opts := metav1.PatchOptions{FieldManager: "e2e"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch kind {
	case admission.Deployment:
		_, err = client.AppsV1().Deployments(ns).Patch(ctx, name, pt, data, opts)
	case admission.StatefulSet:
		_, err = client.AppsV1().StatefulSets(ns).Patch(ctx, name, pt, data, opts)
	case admission.DaemonSet:
		_, err = client.AppsV1().DaemonSets(ns).Patch(ctx, name, pt, data, opts)
	default:
		err = fmt.Errorf("kind %s", kind)
	}
	return err
}

// withoutAdmissionPolicy opts the scene's namespace out of kroll's admission policy
// (kroll.dev/admission-policy=off), for a scenario that writes bad settings to see what
// the controllers make of them, and waits until the API server lets such a write through.
func (s *scene) withoutAdmissionPolicy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	label := []byte(`{"metadata":{"labels":{"` + admission.OptOutLabel + `":"` + admission.OptOutValue + `"}}}`)
	if _, err := s.c.Client.CoreV1().Namespaces().Patch(ctx, s.ns, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := manifestJSON(t, admission.Deployment, "admission-probe", map[string]string{failure.OnFailureAnnotation: "probe"})
	eventually(t, 30*time.Second, "the namespace to be out of kroll's admission policy", func(ctx context.Context) (bool, string) {
		err := writeWorkload(ctx, s.c.Client, s.ns, admission.Deployment, "admission-probe", types.ApplyPatchType, bad, true)
		return err == nil, fmt.Sprint(err)
	})
}
