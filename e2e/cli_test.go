package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kroll-dev/kroll/pkg/cluster"
	"github.com/kroll-dev/kroll/pkg/cluster/clustertest"
	"github.com/kroll-dev/kroll/pkg/inplace"
	"github.com/kroll-dev/kroll/pkg/timeline"
)

// krollCLI runs the kroll binary against one cluster.
type krollCLI struct {
	t          *testing.T
	bin        string
	kubeconfig string
	ns         string
}

// run runs `kroll args... -n ns` and returns exit code, stdout and stderr.
func (k krollCLI) run(args ...string) (int, string, string) {
	k.t.Helper()
	return k.runIn("", nil, append(args, "-n", k.ns, "--kubeconfig", k.kubeconfig)...)
}

// runIn runs kroll in dir with env added (nothing else of kroll's choosing).
func (k krollCLI) runIn(dir string, env []string, args ...string) (int, string, string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		k.t.Fatalf("kroll %s: %v", strings.Join(args, " "), err)
	}
	return code, stdout.String(), stderr.String()
}

func (k krollCLI) must(args ...string) string {
	k.t.Helper()
	code, out, errOut := k.run(args...)
	if code != 0 {
		k.t.Fatalf("kroll %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// inTerminal runs kroll under a pseudo-terminal, as a user at a shell would, and
// returns its exit code and everything it drew.
func (k krollCLI) inTerminal(args ...string) (int, string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append(args, "-n", k.ns, "--kubeconfig", k.kubeconfig)...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		k.t.Fatal(err)
	}
	var out bytes.Buffer
	_, _ = io.Copy(&out, tty) // ends with EIO once kroll exits and the terminal closes
	_ = tty.Close()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	}
	if err != nil {
		k.t.Fatal(err)
	}
	return 0, out.String()
}

func startCLICluster(t *testing.T) (*cluster.Cluster, krollCLI) {
	t.Helper()
	bin := krollBinary(t)
	// The data dir is a .kroll, as `kroll up` run in a directory makes it, so that the
	// CLI finds the cluster from that directory without flags.
	c := clustertest.Start(t, clustertest.WithNodes(3), clustertest.WithDataDir(filepath.Join(t.TempDir(), ".kroll")))
	newScene(t, c, "cli", cluster.WorkloadControllersKroll)
	return c, krollCLI{t: t, bin: bin, kubeconfig: c.KubeconfigPath, ns: "cli"}
}

// Given a cluster, when a user drives the same changes through kroll's embedded kubectl
// verbs and through kubectl itself (on twin objects a and b), then every output is
// kubectl's, byte for byte once the names are swapped.
func TestKrollKubectlVerbsMatchKubectl(t *testing.T) {
	t.Parallel()
	c, kroll := startCLICluster(t)
	editor := writeFile(t, "editor.sh", "#!/bin/sh\nsed -i 's/replicas: 4/replicas: 5/' \"$1\"\n")
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := func(name string) string {
		return writeFile(t, name+".yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: `+name+`
spec:
  replicas: 2
  selector: {matchLabels: {app: `+name+`}}
  template:
    metadata: {labels: {app: `+name+`}}
    spec: {containers: [{name: app, image: "nginx:1.25"}]}
`)
	}
	steps := [][]string{
		{"apply", "-f", "@manifest"},
		{"get", "deployment", "@", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"},
		{"label", "deployment", "@", "tier=web"},
		{"annotate", "deployment", "@", "team=rollouts"},
		{"scale", "deployment", "@", "--replicas=3"},
		{"patch", "deployment", "@", "-p", `{"spec":{"replicas":4}}`},
		{"edit", "deployment", "@"},
		// Each template change is waited out, so that each twin makes one revision of it
		// (a controller that sees two changes at once makes one) and histories compare.
		{"set", "image", "deployment/@", "app=nginx:1.26"},
		{"rollout", "status", "deployment/@"},
		{"set", "env", "deployment/@", "MODE=blue"},
		{"rollout", "status", "deployment/@"},
		{"set", "resources", "deployment/@", "--limits=cpu=200m"},
		{"rollout", "status", "deployment/@"},
		{"rollout", "pause", "deployment/@"},
		{"rollout", "resume", "deployment/@"},
		{"rollout", "restart", "deployment/@"},
		{"rollout", "status", "deployment/@"},
		{"rollout", "undo", "deployment/@", "--to-revision=1"},
		{"rollout", "status", "deployment/@"},
		{"rollout", "history", "deployment/@"},
		{"autoscale", "deployment", "@", "--min=2", "--max=6", "--cpu-percent=80"},
		{"get", "hpa", "@", "-o", "jsonpath={.spec.minReplicas}-{.spec.maxReplicas}"},
		{"create", "configmap", "@-config", "--from-literal=k=v"},
		{"describe", "configmap", "@-config"},
		{"get", "deployment", "@", "-o", "jsonpath={.metadata.labels.tier} {.metadata.annotations.team} {.spec.replicas}"},
		{"delete", "configmap", "@-config"},
	}
	env := []string{"KUBE_EDITOR=" + editor, "EDITOR=" + editor}
	for _, step := range steps {
		if step[1] == "status" {
			// kroll's own rollout status (kubectl's has no -o json): the rollout of a
			// is complete once it is Complete; b's is left to kubectl.
			eventually(t, 90*time.Second, "a rolled out", func(context.Context) (bool, string) {
				_, out, _ := kroll.run("rollout", "status", "deployment/a", "--watch=false", "-o", "json")
				return strings.Contains(out, `"phase":"Complete"`), out
			})
			mustKubectl(t, c.KubeconfigPath, "-n", "cli", "rollout", "status", "deployment/b", "--timeout=90s")
			continue
		}
		args := func(name string) []string {
			out := make([]string, len(step))
			for i, a := range step {
				out[i] = strings.ReplaceAll(a, "@", name)
				if a == "@manifest" {
					out[i] = manifest(name)
				}
			}
			return append(out, "-n", "cli", "--kubeconfig", c.KubeconfigPath)
		}
		code, got, gotErr := kroll.runIn("", env, args("a")...)
		cmd := exec.Command(kubectlPath, args("b")...)
		cmd.Env = append(os.Environ(), env...)
		var want, wantErr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &want, &wantErr
		kubectlErr := cmd.Run()
		if code != 0 || kubectlErr != nil {
			t.Fatalf("%v: kroll exit %d (%s), kubectl %v (%s)", step, code, gotErr, kubectlErr, wantErr.String())
		}
		swapped := strings.NewReplacer("deployment.apps/b", "deployment.apps/a", "configmap/b", "configmap/a", "b-config", "a-config",
			"app=b", "app=a", "horizontalpodautoscaler.autoscaling/b", "horizontalpodautoscaler.autoscaling/a").Replace(want.String())
		// kubectl 1.36, whose code kroll embeds, names the namespace of what it deleted;
		// the kubectl the scenarios drive may be older.
		got = strings.ReplaceAll(got, " deleted from cli namespace\n", " deleted\n")
		swapped = strings.ReplaceAll(swapped, " deleted from cli namespace\n", " deleted\n")
		if step[0] == "describe" {
			// Only names differ; describe prints none of the twins' but the object's own.
			swapped = strings.ReplaceAll(want.String(), "b-config", "a-config")
		}
		if got != swapped {
			t.Errorf("kroll %v printed\n%s\nkubectl printed (names swapped)\n%s", step, got, swapped)
		}
	}
	// Bad input through an embedded verb: kubectl's one line, exit 1, nothing made.
	code, _, errOut := kroll.run("get", "deployment", "nope")
	if code != 1 || strings.TrimSpace(errOut) != `Error from server (NotFound): deployments.apps "nope" not found` {
		t.Errorf("get of a missing deployment: exit %d, %q", code, errOut)
	}
	code, _, errOut = kroll.run("scale", "deployment", "a", "--replicas=-3")
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("scale to -3: exit %d, %q", code, errOut)
	}
	if got := mustKubectl(t, c.KubeconfigPath, "-n", "cli", "get", "deployment", "a", "-o", "jsonpath={.spec.replicas}"); got != "5" {
		t.Errorf("a has %s replicas after the refused scale, want 5", got)
	}

	// The kubeconfig of a `kroll up` running on ./.kroll is found without flags or
	// $KUBECONFIG, silently, by kubectl's verbs and kroll's own.
	dir := filepath.Dir(filepath.Dir(c.KubeconfigPath))
	for _, args := range [][]string{
		{"get", "deployment", "a", "-n", "cli", "-o", "name"},
		{"rollout", "status", "deployment/a", "-n", "cli", "--watch=false"},
		{"status", "-n", "cli"},
	} {
		code, out, errOut := kroll.runIn(dir, []string{"KUBECONFIG=", "HOME=" + dir}, args...)
		if code != 0 || !strings.Contains(out, "a") || errOut != "" {
			t.Errorf("kroll %s from the directory of a running kroll up: exit %d, %q %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	// Its kubeconfig copied elsewhere, where no cluster holds the lock: ignored, said so.
	elsewhere := t.TempDir()
	data, err := os.ReadFile(c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(elsewhere, ".kroll"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, ".kroll", "kubeconfig"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := kroll.runIn(elsewhere, []string{"KUBECONFIG=", "HOME=" + elsewhere}, "get", "deployment", "a", "-n", "cli", "-o", "name")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "kroll: ignoring .kroll/kubeconfig: ") {
		t.Errorf("kroll get from a directory with a copied .kroll/kubeconfig: exit %d, %q %q", code, out, errOut)
	}
}

// Given Deployments, a StatefulSet and a DaemonSet rolling out, when a user follows them
// with kroll's own views, then: status draws a progress bar in a terminal, kubectl's
// lines elsewhere and JSON with -o json, and exits as kubectl does; watch draws the
// revision tree; plan says what a change would do and changes nothing; history --diff
// shows the template change; timeline charts the rollout; kroll status sums it all up
// and fails when a rollout has; bad input is one line and exit 1.
func TestKrollRolloutViews(t *testing.T) {
	t.Parallel()
	c, kroll := startCLICluster(t)
	ctx := context.Background()
	kroll.must("create", "deployment", "web", "--image=nginx:1.25", "--replicas=6")
	kroll.must("rollout", "status", "deployment/web", "--timeout=60s")

	// Plain lines when not a terminal: kubectl's, then kubectl's last line, exit 0.
	kroll.must("set", "image", "deployment/web", "nginx=nginx:1.26")
	out := kroll.must("rollout", "status", "deployment/web", "--timeout=60s")
	if !strings.HasSuffix(out, "deployment \"web\" successfully rolled out\n") || strings.Contains(out, "\x1b[") {
		t.Errorf("plain status:\n%s", out)
	}

	// A progress bar in a terminal, redrawn in place, ending with kubectl's line.
	kroll.must("set", "image", "deployment/web", "nginx=nginx:1.27")
	code, drawn := kroll.inTerminal("rollout", "status", "deployment/web", "--timeout=60s")
	if code != 0 || !strings.Contains(drawn, "█") || !strings.Contains(drawn, "deployment/web  revision 3") ||
		!strings.Contains(drawn, "successfully rolled out") {
		t.Errorf("terminal status: exit %d\n%s", code, drawn)
	}

	// A live tree in a terminal, until the rollout completes.
	kroll.must("set", "image", "deployment/web", "nginx=nginx:1.28")
	code, drawn = kroll.inTerminal("rollout", "watch", "deployment/web", "--until-complete", "--timeout=60s")
	for _, want := range []string{"revision 4 (latest)", "ReplicaSet", "nginx:1.28", "Running", "deployment/web  Complete"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("watch tree lacks %q: exit %d\n%s", want, code, drawn)
		}
	}

	// history --diff: the template change between two revisions.
	diff := kroll.must("rollout", "history", "deployment/web", "--diff", "1", "2")
	if !strings.Contains(diff, "-  - image: nginx:1.25\n+  - image: nginx:1.26\n") || !strings.HasPrefix(diff, "--- revision 1 (web-") {
		t.Errorf("history --diff 1 2:\n%s", diff)
	}

	// timeline: the chart of the latest rollout, from the recorded annotation.
	svg := filepath.Join(t.TempDir(), "web.svg")
	pngFile := filepath.Join(t.TempDir(), "web.png")
	kroll.must("rollout", "timeline", "deployment/web", "-o", svg)
	kroll.must("rollout", "timeline", "deployment/web", "-o", pngFile)
	if data, err := os.ReadFile(svg); err != nil || !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("revision 4")) {
		t.Errorf("timeline svg: %v\n%.300s", err, data)
	}
	if f, err := os.Open(pngFile); err != nil {
		t.Error(err)
	} else if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 100 {
		t.Errorf("timeline png: %v", err)
	}
	d, err := c.Client.AppsV1().Deployments("cli").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Parse(d.Annotations[timeline.Annotation])
	if err != nil || tl.Revision != "4" || len(tl.Samples) < 3 {
		t.Errorf("recorded timeline: revision %q, %d samples, %v", tl.Revision, len(tl.Samples), err)
	} else if last := tl.Samples[len(tl.Samples)-1]; last.New != 6 || last.Old != 0 || last.Available != 6 {
		t.Errorf("the timeline ends at %+v, want 6 new and available, 0 old", last)
	}

	// plan: what a change would do, and nothing changed.
	before := d.ResourceVersion
	plan := kroll.must("rollout", "plan", "deployment/web", "--image", "nginx=nginx:1.29")
	manifest := writeFile(t, "web-v2.yaml", strings.Join([]string{
		"apiVersion: apps/v1", "kind: Deployment", "metadata: {name: web}",
		"spec:", "  replicas: 6", "  selector: {matchLabels: {app: web}}",
		"  template:", "    metadata: {labels: {app: web}}", "    spec: {containers: [{name: nginx, image: \"nginx:1.29\"}]}", ""}, "\n"))
	planFromFile := kroll.must("rollout", "plan", "-f", manifest)
	for _, p := range []string{plan, planFromFile} {
		if !strings.HasPrefix(p, "deployment/web: RollingUpdate (maxSurge 2, maxUnavailable 1), revision 4 → 5\n  image nginx: nginx:1.28 → nginx:1.29\n  on failure: none (a failing rollout waits, as upstream's does)\n  1. create 2 pods of web-") ||
			!strings.Contains(p, "6 created, 6 deleted in") {
			t.Errorf("plan:\n%s", p)
		}
	}
	if d, err := c.Client.AppsV1().Deployments("cli").Get(ctx, "web", metav1.GetOptions{}); err != nil || d.ResourceVersion != before {
		t.Errorf("plan changed the Deployment: %v", err)
	}

	// StatefulSet with a partition, DaemonSet, in place: status knows them all.
	mustKubectl(t, c.KubeconfigPath, "-n", "cli", "apply", "-f", writeFile(t, "db.yaml", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, annotations: {kroll.dev/update-strategy: InPlaceIfPossible}}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "agent:1"}]}
`))
	kroll.must("rollout", "status", "statefulset/db", "--timeout=60s")
	kroll.must("rollout", "status", "daemonset/agent", "--timeout=60s")
	kroll.must("set", "image", "statefulset/db", "db=postgres:17")
	kroll.must("set", "image", "daemonset/agent", "agent=agent:2")
	kroll.must("rollout", "status", "statefulset/db", "--timeout=60s")
	kroll.must("rollout", "status", "daemonset/agent", "--timeout=60s")
	var st struct {
		Phase     string `json:"phase"`
		Partition *int32 `json:"partition"`
		Updated   int32  `json:"updated"`
		Target    int32  `json:"target"`
		InPlace   string `json:"inPlace"`
	}
	if err := json.Unmarshal([]byte(kroll.must("rollout", "status", "statefulset/db", "--watch=false", "-o", "json")), &st); err != nil ||
		st.Phase != "Complete" || st.Partition == nil || *st.Partition != 1 || st.Updated != 2 || st.Target != 2 {
		t.Errorf("statefulset status json: %+v %v", st, err)
	}
	if err := json.Unmarshal([]byte(kroll.must("rollout", "status", "daemonset/agent", "--watch=false", "-o", "json")), &st); err != nil ||
		st.Phase != "Complete" || st.InPlace != inplace.ReasonComplete || st.Updated != 3 {
		t.Errorf("daemonset status json: %+v %v", st, err)
	}
	if p := kroll.must("rollout", "plan", "daemonset/agent", "--image", "agent=agent:3"); !strings.Contains(p, "in-place") {
		t.Errorf("daemonset in-place plan:\n%s", p)
	}
	if p := kroll.must("rollout", "plan", "statefulset/db", "--image", "db=postgres:18"); !strings.Contains(p, "replace db-2") || !strings.Contains(p, "db-0 stays") {
		t.Errorf("statefulset partition plan:\n%s", p)
	}

	// A rollout that cannot finish: status exits 1 as kubectl's does, names the pod and
	// why; kroll status reports it failed and exits 1.
	kroll.must("create", "deployment", "stuck", "--image=nginx:1.25", "--replicas=2")
	kroll.must("rollout", "status", "deployment/stuck", "--timeout=60s")
	kroll.must("patch", "deployment", "stuck", "-p", `{"spec":{"progressDeadlineSeconds":3}}`)
	kroll.must("set", "image", "deployment/stuck", "nginx=nginx:nonexistent")
	code, out, errOut := kroll.run("rollout", "status", "deployment/stuck", "--timeout=60s")
	if code != 1 || errOut != "error: deployment \"stuck\" exceeded its progress deadline\n" || !strings.Contains(out, ": ImagePullBackOff)") && !strings.Contains(out, ": ErrImagePull)") {
		t.Errorf("status of a stuck rollout: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "exceeded") {
		t.Errorf("status of a stuck rollout printed its error on stdout too (kubectl prints it once, on stderr):\n%s", out)
	}
	var stuck struct {
		Phase    string `json:"phase"`
		Blocking struct{ Pod, Reason string }
	}
	code, out, _ = kroll.run("rollout", "status", "deployment/stuck", "--watch=false", "-o", "json")
	if err := json.Unmarshal([]byte(out), &stuck); code != 1 || err != nil ||
		stuck.Phase != "Failed" || !strings.HasPrefix(stuck.Blocking.Pod, "stuck-") || (stuck.Blocking.Reason != "ImagePullBackOff" && stuck.Blocking.Reason != "ErrImagePull") {
		t.Errorf("stuck status json: %+v %v", stuck, err)
	}
	code, out, errOut = kroll.run("status")
	for _, want := range []string{"deployment/web    succeeded", "deployment/stuck  failed", "statefulset/db    succeeded", "daemonset/agent   succeeded", "waiting on stuck-"} {
		if !strings.Contains(out, want) {
			t.Errorf("kroll status lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || strings.TrimSpace(errOut) != "kroll: 1 of 4 rollouts failed" {
		t.Errorf("kroll status: exit %d, %q", code, errOut)
	}
	if code, out, _ := kroll.runIn("", nil, "status", "-A", "--kubeconfig", c.KubeconfigPath); code != 1 || !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, "cli        deployment/stuck") {
		t.Errorf("kroll status -A: exit %d\n%s", code, out)
	}

	// Bad input: one line, exit 1, nothing changed.
	before = resourceVersions(t, c, "cli")
	unreachable := writeFile(t, "unreachable.kubeconfig", strings.Replace(string(must(os.ReadFile(c.KubeconfigPath))), c.Server, "https://127.0.0.1:1", 1))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "status", "foo/web"}, `kroll: unknown kind "foo": rollouts are of deployment, statefulset or daemonset`},
		{[]string{"rollout", "status", "deployment/nope"}, `kroll: deployment/nope not found in namespace "cli"`},
		{[]string{"rollout", "watch", "statefulset/nope"}, `kroll: statefulset/nope not found in namespace "cli"`},
		{[]string{"rollout", "status", "deployment/web", "--bogus"}, "kroll: kroll rollout status: unknown flag: --bogus; see 'kroll rollout status --help'"},
		{[]string{"rollout", "status", "deployment/web", "-o", "yaml"}, `kroll: unknown output format "yaml": use -o json`},
		{[]string{"rollout", "plan"}, "kroll: name the workload (TYPE/NAME), or give the change as -f FILE"},
		{[]string{"rollout", "plan", "deployment/web", "-f", "web.yaml", "--image", "nginx=x:1"}, "kroll: give the change as -f FILE or as --image CONTAINER=IMAGE, not both"},
		{[]string{"rollout", "plan", "deployment/web", "--image", "nope=x:1"}, `kroll: deployment/web has no container "nope" (containers: nginx)`},
		{[]string{"rollout", "plan", "-f", writeFile(t, "bad.yaml", "kind: [")}, "is not a valid manifest"},
		{[]string{"rollout", "history", "deployment/web", "--diff", "1", "99"}, "kroll: deployment/web has no revision 99 (revisions:"},
		{[]string{"rollout", "timeline", "deployment/web", "-o", "web.gif"}, `kroll: -o must name an .svg or .png file, not "web.gif"`},
		{[]string{"rollout", "status", "deployment/web", "--kubeconfig", unreachable}, "kroll: cannot reach the API server at https://127.0.0.1:1"},
	} {
		code, _, errOut := kroll.run(tc.args...)
		if tc.args[len(tc.args)-2] == "--kubeconfig" {
			code, _, errOut = kroll.runIn("", nil, append(tc.args, "-n", "cli")...)
		}
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("kroll %v: exit %d, stderr %q; want one line with %q", tc.args, code, errOut, tc.want)
		}
	}
	if after := resourceVersions(t, c, "cli"); after != before {
		t.Errorf("bad input changed the namespace:\nbefore %s\nafter  %s", before, after)
	}
}

// resourceVersions is what bad input must not change: every workload's generation and
// every pod, by name and UID.
func resourceVersions(t *testing.T, c *cluster.Cluster, ns string) string {
	t.Helper()
	ctx := context.Background()
	var parts []string
	ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		parts = append(parts, fmt.Sprintf("deployment/%s gen=%d", d.Name, d.Generation))
	}
	sts, err := c.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts.Items {
		parts = append(parts, fmt.Sprintf("statefulset/%s gen=%d", s.Name, s.Generation))
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		parts = append(parts, fmt.Sprintf("pod/%s uid=%s", p.Name, p.UID))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
