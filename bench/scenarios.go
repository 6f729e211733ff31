package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Scenario is one measured change.
type Scenario struct {
	// Name is the scenario's key in results.json, e.g. "rolling-1000-qps20".
	Name string `json:"name"`
	// Title says what is measured, for tables and progress lines.
	Title string `json:"title"`
	// Size is the scenario's N: replicas, pods or nodes.
	Size int `json:"size"`
	// Nodes is how many simulated nodes the cluster has.
	Nodes int `json:"nodes"`
	// Arms are the controller sets compared, run alternately.
	Arms []Arm `json:"arms"`
	// Limits are the controllers' client limits while measured (preparing is unthrottled).
	Limits Limits `json:"limits"`

	// settle is how long the restarted controllers get to sync their caches.
	settle time.Duration
	// prepare creates the workload and waits until it is complete; nil: nothing.
	prepare func(ctx context.Context, r *run) error
	// measure makes the change and waits until it is done.
	measure func(ctx context.Context, r *run) (measurement, error)
}

// Arm is one controller set of a scenario.
type Arm struct {
	// Name is "kroll", "upstream", "kroll-inplace" or "api".
	Name        string      `json:"name"`
	Controllers Controllers `json:"controllers"`
	// InPlace opts the workload into kroll's in-place updates (InPlaceIfPossible).
	InPlace bool `json:"inPlace,omitempty"`
	// Budget opts the workload into kroll's disruption budgets (Respect): its old pods
	// go through the Eviction API, each checked against the scenario's budget.
	Budget bool `json:"budget,omitempty"`
	// Config makes the scenario's change an edit of the ConfigMap its Deployments read
	// (kroll.dev/config-rollout) instead of a new image.
	Config bool `json:"config,omitempty"`
}

var (
	krollArm    = Arm{Name: "kroll", Controllers: Kroll}
	upstreamArm = Arm{Name: "upstream", Controllers: Upstream}
	inPlaceArm  = Arm{Name: "kroll-inplace", Controllers: Kroll, InPlace: true}
	budgetArm   = Arm{Name: "kroll-budget", Controllers: Kroll, Budget: true}
	configArm   = Arm{Name: "kroll-config", Controllers: Kroll, Config: true}
	apiArm      = Arm{Name: "api", Controllers: NoControllers}
)

// measurement is what a scenario's measure reports.
type measurement struct {
	// seconds is from the change to done; zero where nothing changes (steady state).
	seconds float64
	// podWritesPerSecond is pod creates plus deletes per second, where the change
	// replaces pods.
	podWritesPerSecond float64
	// cores is the controllers' CPU use at rest, where the scenario measures rest, and
	// clusterCores the cluster's (the harness's process) over the same window.
	cores, clusterCores float64
	// podStatusWrites are the pod status writes (PUT and PATCH pods/status) the API
	// server served over that window; nil where the scenario does not count them.
	podStatusWrites *float64
	// The rollback scenario's: seconds from the first failing pod to the rollback
	// write and to every pod Ready again, from the change to ProgressDeadlineExceeded,
	// and the observation window when it did not recover within it; zero when not seen.
	failingToRollback, failingToReady, deadlineExceeded, notRecoveredWithin float64
	// leastAvailabilityMargin is, where Deployments roll, the least availabilityMargin
	// of theirs seen from the change until done.
	leastAvailabilityMargin *int32
}

// Scenarios are the harness's scenarios at scale (see Options.Scale).
func Scenarios(scale float64, steadyWindow, rollbackWindow time.Duration) []Scenario {
	n := func(x int) int { return max(1, int(math.Round(float64(x)*scale))) }
	var all []Scenario
	for _, size := range []int{n(1000), n(5000)} {
		all = append(all, ceilingScenario(size))
	}
	for _, size := range []int{n(1000), n(5000)} {
		for _, limits := range []Limits{DefaultLimits, Unthrottled} {
			arms := []Arm{krollArm, upstreamArm}
			if size == n(1000) && limits == DefaultLimits {
				// In place is compared with the rolling update at equal limits, in the
				// same run.
				arms = append(arms, inPlaceArm)
			}
			all = append(all, rollingScenario(size, limits, arms))
		}
	}
	all = append(all, budgetScenario(n(1000)))
	all = append(all,
		manyRolloutsScenario(n(200), 10),
		configScenario(n(100), 10),
		statefulSetScenario(n(100)),
		daemonSetScenario(n(100)),
		rollbackScenario(n(100), rollbackWindow),
		resizeScenario(n(1000)),
		steadyScenario(n(10000), 10, steadyWindow, false),
		steadyScenario(n(10000), 10, steadyWindow, true),
		steadyScenario(n(30000), 30, steadyWindow, false))
	return all
}

func selectScenarios(all []Scenario, only []string) ([]Scenario, error) {
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	for _, name := range only {
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("--only: no scenario %q at this scale; there are %s", name, strings.Join(names, ", "))
		}
	}
	// In the harness's order, whatever the order of only.
	var out []Scenario
	for _, s := range all {
		if slices.Contains(only, s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// nodesFor gives room for pods pods plus a 25% surge at 100 pods a node (of 110), and
// at least 20 nodes.
func nodesFor(pods int) int { return max(20, (pods*125/100+99)/100) }

// settleFor is how long a controller process restarted over pods pods waits before
// the change: informers list them in well under that.
func settleFor(pods int) time.Duration { return 2*time.Second + time.Duration(pods)*time.Millisecond }

// ceilingScenario: a client with 32 workers creates size bare pods, waits until all
// are Ready, deletes them all and waits until they are gone. No controllers run: this
// is what the API server, etcd, the scheduler and the simulated kubelet sustain, the
// limit the rollouts are measured against.
func ceilingScenario(size int) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("ceiling-%d", size),
		Title: fmt.Sprintf("Raw ceiling: %d pods created and deleted by a parallel client", size),
		Size:  size, Nodes: nodesFor(size), Arms: []Arm{apiArm},
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		pods := r.informers.Core().V1().Pods()
		if err := r.sync(ctx, pods.Informer()); err != nil {
			return measurement{}, err
		}
		ready := func() int { list, _ := pods.Lister().List(labels.Everything()); return readyPods(list) }
		count := func() int { list, _ := pods.Lister().List(labels.Everything()); return len(list) }
		began := time.Now()
		if err := inParallel(ctx, size, 32, func(ctx context.Context, i int) error {
			_, err := r.client.CoreV1().Pods(namespace).Create(ctx, newPod(i), metav1.CreateOptions{})
			return err
		}); err != nil {
			return measurement{}, fmt.Errorf("create pods: %w", err)
		}
		if err := until(ctx, pods.Informer(), 20*time.Minute, "pods Ready", func() bool { return ready() == size },
			func() string { return fmt.Sprintf("%d of %d Ready", ready(), size) }); err != nil {
			return measurement{}, err
		}
		if err := inParallel(ctx, size, 32, func(ctx context.Context, i int) error {
			return r.client.CoreV1().Pods(namespace).Delete(ctx, newPod(i).Name, metav1.DeleteOptions{})
		}); err != nil {
			return measurement{}, fmt.Errorf("delete pods: %w", err)
		}
		if err := until(ctx, pods.Informer(), 20*time.Minute, "pods gone", func() bool { return count() == 0 },
			func() string { return fmt.Sprintf("%d left", count()) }); err != nil {
			return measurement{}, err
		}
		secs := time.Since(began).Seconds()
		return measurement{seconds: secs, podWritesPerSecond: float64(2*size) / secs}, nil
	}
	return s
}

// rollingScenario: the image of one Deployment of size replicas (25%/25%) changes; timed
// from the change until `kubectl rollout status` would return.
func rollingScenario(size int, limits Limits, arms []Arm) Scenario {
	key := "qps20"
	if limits == Unthrottled {
		key = "unthrottled"
	}
	s := Scenario{
		Name:  fmt.Sprintf("rolling-%d-%s", size, key),
		Title: fmt.Sprintf("RollingUpdate, 1 Deployment × %d, %s", size, limits),
		Size:  size, Nodes: nodesFor(size), Arms: arms, Limits: limits, settle: settleFor(size),
	}
	s.prepare = func(ctx context.Context, r *run) error {
		return r.createDeployments(ctx, []*appsv1.Deployment{withBudget(newDeployment("bench", int32(size), r.arm.InPlace), r.arm)})
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		secs, margin, err := r.rollDeployments(ctx, []string{"bench"})
		if err != nil {
			return measurement{}, err
		}
		m := measurement{seconds: secs, leastAvailabilityMargin: margin}
		if !r.arm.InPlace {
			m.podWritesPerSecond = float64(2*size) / secs
		}
		return m, nil
	}
	return s
}

// manyRolloutsScenario: count Deployments of replicas each change image at once.
func manyRolloutsScenario(count, replicas int) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("many-%dx%d", count, replicas),
		Title: fmt.Sprintf("Many small rollouts: %d Deployments × %d, at once, %s", count, replicas, Unthrottled),
		Size:  count * replicas, Nodes: nodesFor(count * replicas), Arms: []Arm{krollArm, upstreamArm},
		Limits: Unthrottled, settle: settleFor(count * replicas),
	}
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
	}
	s.prepare = func(ctx context.Context, r *run) error {
		ds := make([]*appsv1.Deployment, count)
		for i, name := range names {
			ds[i] = newDeployment(name, int32(replicas), false)
		}
		return r.createDeployments(ctx, ds)
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		secs, margin, err := r.rollDeployments(ctx, names)
		if err != nil {
			return measurement{}, err
		}
		return measurement{seconds: secs, podWritesPerSecond: float64(2*count*replicas) / secs, leastAvailabilityMargin: margin}, nil
	}
	return s
}

// statefulSetScenario: the image of an OrderedReady StatefulSet of size replicas changes.
func statefulSetScenario(size int) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("statefulset-%d", size),
		Title: fmt.Sprintf("StatefulSet × %d, RollingUpdate, OrderedReady, %s", size, DefaultLimits),
		Size:  size, Nodes: nodesFor(size), Arms: []Arm{krollArm, upstreamArm}, Limits: DefaultLimits, settle: settleFor(size),
	}
	s.prepare, s.measure = oneWorkload(size, workload{
		informer: func(r *run) cache.SharedIndexInformer { return r.informers.Apps().V1().StatefulSets().Informer() },
		create: func(ctx context.Context, r *run) error {
			_, err := r.client.AppsV1().StatefulSets(namespace).Create(ctx, newStatefulSet("bench", int32(size)), metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, r *run) error {
			_, err := r.client.AppsV1().StatefulSets(namespace).Patch(ctx, "bench", types.StrategicMergePatchType, imagePatch, metav1.PatchOptions{})
			return err
		},
		done: func(r *run, image string) (bool, string) {
			st, err := r.informers.Apps().V1().StatefulSets().Lister().StatefulSets(namespace).Get("bench")
			if err != nil {
				return false, err.Error()
			}
			return statefulSetDone(st, image), fmt.Sprintf("%+v", st.Status)
		},
	})
	return s
}

// daemonSetScenario: the image of a DaemonSet on nodes nodes changes (maxUnavailable 1).
func daemonSetScenario(nodes int) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("daemonset-%d", nodes),
		Title: fmt.Sprintf("DaemonSet over %d nodes, RollingUpdate (maxUnavailable 1), %s", nodes, DefaultLimits),
		Size:  nodes, Nodes: nodes, Arms: []Arm{krollArm, upstreamArm}, Limits: DefaultLimits, settle: settleFor(nodes),
	}
	s.prepare, s.measure = oneWorkload(nodes, workload{
		informer: func(r *run) cache.SharedIndexInformer { return r.informers.Apps().V1().DaemonSets().Informer() },
		create: func(ctx context.Context, r *run) error {
			_, err := r.client.AppsV1().DaemonSets(namespace).Create(ctx, newDaemonSet("bench"), metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, r *run) error {
			_, err := r.client.AppsV1().DaemonSets(namespace).Patch(ctx, "bench", types.StrategicMergePatchType, imagePatch, metav1.PatchOptions{})
			return err
		},
		done: func(r *run, image string) (bool, string) {
			d, err := r.informers.Apps().V1().DaemonSets().Lister().DaemonSets(namespace).Get("bench")
			if err != nil {
				return false, err.Error()
			}
			return daemonSetDone(d, image, int32(nodes)), fmt.Sprintf("%+v", d.Status)
		},
	})
	return s
}

// workload is one object named "bench" of a kind, as oneWorkload drives it.
type workload struct {
	informer func(r *run) cache.SharedIndexInformer
	create   func(ctx context.Context, r *run) error
	// patch changes the image to newImage.
	patch func(ctx context.Context, r *run) error
	// done tells whether the object is complete at image, and describes its status.
	done func(r *run, image string) (bool, string)
}

// oneWorkload prepares by creating w and waiting until it is complete, and measures the
// image change of its pods pods until it is complete again.
func oneWorkload(pods int, w workload) (prepare func(context.Context, *run) error, measure func(context.Context, *run) (measurement, error)) {
	wait := func(ctx context.Context, r *run, what, image string) error {
		ok := func() bool { done, _ := w.done(r, image); return done }
		state := func() string { _, s := w.done(r, image); return s }
		return until(ctx, w.informer(r), 30*time.Minute, what, ok, state)
	}
	prepare = func(ctx context.Context, r *run) error {
		if err := r.sync(ctx, w.informer(r)); err != nil {
			return err
		}
		if err := w.create(ctx, r); err != nil {
			return err
		}
		return wait(ctx, r, "created", oldImage)
	}
	measure = func(ctx context.Context, r *run) (measurement, error) {
		began := time.Now()
		if err := w.patch(ctx, r); err != nil {
			return measurement{}, err
		}
		if err := wait(ctx, r, "rolled", newImage); err != nil {
			return measurement{}, err
		}
		secs := time.Since(began).Seconds()
		return measurement{seconds: secs, podWritesPerSecond: float64(2*pods) / secs}, nil
	}
	return prepare, measure
}

// steadyScenario: pods pods in deployments Deployments, nothing changing; the
// controllers' CPU over window (after as long again to settle), the cluster's over the
// same window, their memory and the cluster's. probed gives every pod a readiness and
// a liveness probe every 10 s, which the simulated kubelets run all along, and counts
// the pod status writes over the window: at rest, no probe result changes, so none.
// The probes are the kubelets' work, not the controllers': probed runs kroll's arm only.
func steadyScenario(pods, deployments int, window time.Duration, probed bool) Scenario {
	s := Scenario{
		Name:  fmt.Sprintf("steady-%d", pods),
		Title: fmt.Sprintf("Steady state: %d pods in %d Deployments, idle controllers, %s", pods, deployments, DefaultLimits),
		Size:  pods, Nodes: nodesFor(pods), Arms: []Arm{krollArm, upstreamArm}, Limits: DefaultLimits, settle: settleFor(pods),
	}
	if probed {
		s.Name += "-probed"
		s.Title = fmt.Sprintf("Steady state: %d pods in %d Deployments, each with a readiness and a liveness probe every 10 s, %s", pods, deployments, DefaultLimits)
		s.Arms = []Arm{krollArm}
	}
	s.prepare = func(ctx context.Context, r *run) error {
		ds := make([]*appsv1.Deployment, deployments)
		for i := range ds {
			// The pods are spread as evenly as the count allows.
			replicas := pods / deployments
			if i < pods%deployments {
				replicas++
			}
			ds[i] = newDeployment(fmt.Sprintf("bench-%02d", i), int32(replicas), false)
			if probed {
				withProbes(&ds[i].Spec.Template)
			}
		}
		return r.createDeployments(ctx, ds)
	}
	s.measure = func(ctx context.Context, r *run) (measurement, error) {
		if err := sleep(ctx, window); err != nil {
			return measurement{}, err
		}
		before, err := r.usage()
		if err != nil {
			return measurement{}, err
		}
		_, writesBefore, err := countRequests(ctx, r.client)
		if err != nil {
			return measurement{}, err
		}
		clusterBefore := ownCPUSeconds()
		if err := sleep(ctx, window); err != nil {
			return measurement{}, err
		}
		clusterAfter := ownCPUSeconds()
		after, err := r.usage()
		if err != nil {
			return measurement{}, err
		}
		_, writesAfter, err := countRequests(ctx, r.client)
		if err != nil {
			return measurement{}, err
		}
		m := measurement{
			cores:        (after.cpuSeconds - before.cpuSeconds) / window.Seconds(),
			clusterCores: (clusterAfter - clusterBefore) / window.Seconds(),
		}
		if probed {
			w := writesAfter.since(writesBefore)
			statusWrites := w["PUT pods/status"] + w["PATCH pods/status"] + w["APPLY pods/status"]
			m.podStatusWrites = &statusWrites
		}
		return m, nil
	}
	return s
}
