package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kroll-dev/kroll/pkg/kubelet"
)

// The takeover population: one workload of every kind in every state a live cluster
// holds when its workload controllers are switched. Each member is driven into its
// state by whichever controllers run (setup), may be edited while none run (gap: what
// a user or another controller did in the switch's window), and is either steady (the
// controllers that take over must not write to it at all) or in flight (they must take
// it to the end upstream's controllers reach).

// workloadLabel names the member an object belongs to: every template, claim and
// workload carries it, so that the ledger can attribute any object to its member.
const workloadLabel = "takeover"

// member is one workload of the population.
type member struct {
	name, kind, state string
	// inFlight: the controllers that take over have work left (a rollout, an adoption,
	// a pruning); otherwise the member is steady and must see no write at all.
	inFlight bool
	// setup creates the workload and drives it into its state; it returns when the
	// state is reached.
	setup func(ctx context.Context, p *population) error
	// gap edits the workload while no controllers run (nil: nothing).
	gap func(ctx context.Context, p *population) error
	// done tells whether an in-flight member has reached its end.
	done func(ctx context.Context, p *population) (bool, string)
}

// population is the members in one namespace.
type population struct {
	client  kubernetes.Interface
	ns      string
	members []member
}

func newPopulation(client kubernetes.Interface, ns string) *population {
	return &population{client: client, ns: ns, members: takeoverMembers()}
}

// setupAll creates the namespace and runs every member's setup concurrently.
func (p *population) setupAll(ctx context.Context) error {
	if _, err := p.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := p.client.CoreV1().ServiceAccounts(p.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return fmt.Errorf("namespace %s has no default ServiceAccount: %w", p.ns, err)
	}
	return p.each(func(m member) error {
		if err := m.setup(ctx, p); err != nil {
			return fmt.Errorf("%s %s (%s): %w", m.kind, m.name, m.state, err)
		}
		return nil
	})
}

// gapAll runs the members' edits of the switch's window.
func (p *population) gapAll(ctx context.Context) error {
	return p.each(func(m member) error {
		if m.gap == nil {
			return nil
		}
		if err := m.gap(ctx, p); err != nil {
			return fmt.Errorf("%s %s (%s), while no controllers run: %w", m.kind, m.name, m.state, err)
		}
		return nil
	})
}

// waitDone waits for every in-flight member to reach its end.
func (p *population) waitDone(ctx context.Context, timeout time.Duration) error {
	return p.each(func(m member) error {
		if m.done == nil {
			return nil
		}
		if err := poll(ctx, timeout, func(ctx context.Context) (bool, string) { return m.done(ctx, p) }); err != nil {
			return fmt.Errorf("%s %s (%s) did not finish: %w", m.kind, m.name, m.state, err)
		}
		return nil
	})
}

func (p *population) each(fn func(member) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.members))
	for i, m := range p.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(m)
		}()
	}
	wg.Wait()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	return nil
}

// table is the population by kind and state, for the closing note.
func (p *population) table() string {
	var b strings.Builder
	byKind := map[string][]string{}
	var kinds []string
	for _, m := range p.members {
		if byKind[m.kind] == nil {
			kinds = append(kinds, m.kind)
		}
		flight := "steady"
		if m.inFlight {
			flight = "in flight"
		}
		byKind[m.kind] = append(byKind[m.kind], fmt.Sprintf("%s (%s, %s)", m.name, m.state, flight))
	}
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-22s %d: %s\n", k, len(byKind[k]), strings.Join(byKind[k], "; "))
	}
	return b.String()
}

// poll checks cond every 200ms until it holds, or fails after timeout with the last
// state cond described.
func poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, state := cond(ctx)
		last = state
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("after %s: %s", timeout, last)
	}
	return nil
}

// Templates. Version v of a member's template runs nginx:1.25.v; slow makes its pods
// take that long to start (so a rollout is midway at the switch), never makes them
// never ready (so a paused rollout stays where it was paused).

func template(name string, v int, annotations map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{workloadLabel: name}, Annotations: annotations},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "web", Image: fmt.Sprintf("nginx:1.25.%d", v)}},
		},
	}
}

func slow(d time.Duration) map[string]string {
	return map[string]string{kubelet.AnnotationStartupDelay: d.String()}
}

func never() map[string]string {
	return map[string]string{kubelet.AnnotationFault: string(kubelet.FaultNeverReady)}
}

func selector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{workloadLabel: name}}
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{workloadLabel: name}}
}

func deployment(name string, replicas int32, edit func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: objectMeta(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: selector(name),
			Template: template(name, 0, nil),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			}},
		},
	}
	if edit != nil {
		edit(d)
	}
	return d
}

func statefulSet(name string, replicas int32, edit func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: objectMeta(name),
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), Selector: selector(name), ServiceName: name, Template: template(name, 0, nil),
		},
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func daemonSet(name string, edit func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	s := &appsv1.DaemonSet{
		ObjectMeta: objectMeta(name),
		Spec:       appsv1.DaemonSetSpec{Selector: selector(name), Template: template(name, 0, nil)},
	}
	if edit != nil {
		edit(s)
	}
	return s
}

// Waits and edits used by the members.

func deploymentComplete(ctx context.Context, p *population, name string) (bool, string) {
	d, err := p.client.AppsV1().Deployments(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	s := d.Status
	want := *d.Spec.Replicas
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want,
		fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d of %d", d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
}

func waitFor(ctx context.Context, p *population, what string, cond func(ctx context.Context, p *population) (bool, string)) error {
	if err := poll(ctx, 90*time.Second, func(ctx context.Context) (bool, string) { return cond(ctx, p) }); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

func completeDeployment(name string) func(ctx context.Context, p *population) (bool, string) {
	return func(ctx context.Context, p *population) (bool, string) { return deploymentComplete(ctx, p, name) }
}

// newReplicaSetOf is the ReplicaSet of name's Deployment running image, if any.
func newReplicaSetOf(ctx context.Context, p *population, name, image string) *appsv1.ReplicaSet {
	rss, err := p.client.AppsV1().ReplicaSets(p.ns).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=" + name})
	if err != nil {
		return nil
	}
	for i := range rss.Items {
		if rss.Items[i].Spec.Template.Spec.Containers[0].Image == image {
			return &rss.Items[i]
		}
	}
	return nil
}

func patch(ctx context.Context, p *population, resource, name, body string) error {
	var err error
	rest := p.client.AppsV1().RESTClient()
	err = rest.Patch(types.StrategicMergePatchType).Namespace(p.ns).Resource(resource).Name(name).Body([]byte(body)).Do(ctx).Error()
	return err
}

// setImage patches name's template to version v with annotations.
func setTemplate(ctx context.Context, p *population, resource, name string, v int, annotations map[string]string) error {
	tmpl := template(name, v, annotations)
	ann := "null"
	if len(annotations) > 0 {
		var kv []string
		for k, val := range annotations {
			kv = append(kv, fmt.Sprintf("%q:%q", k, val))
		}
		sort.Strings(kv)
		ann = "{" + strings.Join(kv, ",") + "}"
	}
	return patch(ctx, p, resource, name, fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":%s},"spec":{"containers":[{"name":"web","image":%q}]}}}}`, ann, tmpl.Spec.Containers[0].Image))
}

func statefulSetSettled(ctx context.Context, p *population, name string, updated int32) (bool, string) {
	s, err := p.client.AppsV1().StatefulSets(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	st := s.Status
	want := *s.Spec.Replicas
	if updated < 0 {
		updated = want
	}
	return st.ObservedGeneration >= s.Generation && st.Replicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want && st.UpdatedReplicas == updated,
		fmt.Sprintf("generation %d observed %d, replicas %d ready %d updated %d (want %d updated of %d)", s.Generation, st.ObservedGeneration, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, updated, want)
}

func statefulSetRolled(name string) func(ctx context.Context, p *population) (bool, string) {
	return func(ctx context.Context, p *population) (bool, string) {
		ok, state := statefulSetSettled(ctx, p, name, -1)
		if !ok {
			return false, state
		}
		s, err := p.client.AppsV1().StatefulSets(p.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.CurrentRevision == s.Status.UpdateRevision, "current revision " + s.Status.CurrentRevision + ", update revision " + s.Status.UpdateRevision
	}
}

func daemonSetSettled(ctx context.Context, p *population, name string, updated int32) (bool, string) {
	s, err := p.client.AppsV1().DaemonSets(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	st := s.Status
	if updated < 0 {
		updated = st.DesiredNumberScheduled
	}
	return st.ObservedGeneration >= s.Generation && st.DesiredNumberScheduled > 0 && st.CurrentNumberScheduled == st.DesiredNumberScheduled &&
			st.NumberAvailable == st.DesiredNumberScheduled && st.UpdatedNumberScheduled == updated && st.NumberUnavailable == 0,
		fmt.Sprintf("generation %d observed %d, desired %d current %d updated %d available %d", s.Generation, st.ObservedGeneration, st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable)
}

func daemonSetRolled(name string) func(ctx context.Context, p *population) (bool, string) {
	return func(ctx context.Context, p *population) (bool, string) {
		ok, state := daemonSetSettled(ctx, p, name, -1)
		if !ok {
			return false, state
		}
		pods, err := p.client.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=" + name})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 3, fmt.Sprintf("%d pods", len(pods.Items))
	}
}

// takeoverMembers is the population. Sizes are small (2–3 pods) and startup delays
// short, so that three populations go through their states in about a minute each.
func takeoverMembers() []member {
	apps := func(p *population) (kubernetes.Interface, string) { return p.client, p.ns }
	createD := func(ctx context.Context, p *population, d *appsv1.Deployment) error {
		c, ns := apps(p)
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
		return waitFor(ctx, p, d.Name+" complete", completeDeployment(d.Name))
	}
	createS := func(ctx context.Context, p *population, s *appsv1.StatefulSet) error {
		c, ns := apps(p)
		if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		return waitFor(ctx, p, s.Name+" ready", statefulSetRolled(s.Name))
	}
	createDS := func(ctx context.Context, p *population, s *appsv1.DaemonSet) error {
		c, ns := apps(p)
		if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		return waitFor(ctx, p, s.Name+" ready", daemonSetRolled(s.Name))
	}
	return []member{
		{name: "d-complete", kind: "Deployment", state: "complete", setup: func(ctx context.Context, p *population) error {
			return createD(ctx, p, deployment("d-complete", 3, nil))
		}},
		{name: "d-rolling", kind: "Deployment", state: "mid-RollingUpdate", inFlight: true, done: completeDeployment("d-rolling"),
			setup: func(ctx context.Context, p *population) error {
				if err := createD(ctx, p, deployment("d-rolling", 3, nil)); err != nil {
					return err
				}
				if err := setTemplate(ctx, p, "deployments", "d-rolling", 1, slow(4*time.Second)); err != nil {
					return err
				}
				return waitFor(ctx, p, "the new ReplicaSet's first pod", func(ctx context.Context, p *population) (bool, string) {
					rs := newReplicaSetOf(ctx, p, "d-rolling", "nginx:1.25.1")
					return rs != nil && rs.Status.Replicas >= 1, "no new pod yet"
				})
			}},
		{name: "d-paused", kind: "Deployment", state: "paused mid-rollout", setup: func(ctx context.Context, p *population) error {
			if err := createD(ctx, p, deployment("d-paused", 3, nil)); err != nil {
				return err
			}
			if err := setTemplate(ctx, p, "deployments", "d-paused", 1, never()); err != nil {
				return err
			}
			if err := waitFor(ctx, p, "the surge pod", func(ctx context.Context, p *population) (bool, string) {
				rs := newReplicaSetOf(ctx, p, "d-paused", "nginx:1.25.1")
				return rs != nil && rs.Status.Replicas == 1, "no new pod yet"
			}); err != nil {
				return err
			}
			if err := patch(ctx, p, "deployments", "d-paused", `{"spec":{"paused":true}}`); err != nil {
				return err
			}
			return waitFor(ctx, p, "the pause observed", func(ctx context.Context, p *population) (bool, string) {
				d, err := p.client.AppsV1().Deployments(p.ns).Get(ctx, "d-paused", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range d.Status.Conditions {
					if c.Type == appsv1.DeploymentProgressing && c.Reason == "DeploymentPaused" {
						return d.Status.ObservedGeneration == d.Generation, "observed"
					}
				}
				return false, fmt.Sprintf("conditions %v", d.Status.Conditions)
			})
		}},
		{name: "d-deadline", kind: "Deployment", state: "past its progress deadline", setup: func(ctx context.Context, p *population) error {
			if err := createD(ctx, p, deployment("d-deadline", 2, func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](4) })); err != nil {
				return err
			}
			// nginx:1.25.404 is not a tag of the catalogue: ErrImagePull, then back-off.
			if err := setTemplate(ctx, p, "deployments", "d-deadline", 404, nil); err != nil {
				return err
			}
			return waitFor(ctx, p, "ProgressDeadlineExceeded", func(ctx context.Context, p *population) (bool, string) {
				d, err := p.client.AppsV1().Deployments(p.ns).Get(ctx, "d-deadline", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range d.Status.Conditions {
					if c.Type == appsv1.DeploymentProgressing {
						return c.Reason == "ProgressDeadlineExceeded", c.Reason
					}
				}
				return false, "no Progressing condition"
			})
		}},
		{name: "d-recreate", kind: "Deployment", state: "Recreate midway", inFlight: true, done: completeDeployment("d-recreate"),
			setup: func(ctx context.Context, p *population) error {
				if err := createD(ctx, p, deployment("d-recreate", 3, func(d *appsv1.Deployment) {
					d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				})); err != nil {
					return err
				}
				if err := setTemplate(ctx, p, "deployments", "d-recreate", 1, slow(5*time.Second)); err != nil {
					return err
				}
				return waitFor(ctx, p, "the new pods created", func(ctx context.Context, p *population) (bool, string) {
					rs := newReplicaSetOf(ctx, p, "d-recreate", "nginx:1.25.1")
					return rs != nil && rs.Status.Replicas == 3, "new pods not all created"
				})
			}},
		{name: "d-history", kind: "Deployment", state: "rolled back once (revision-history)", setup: func(ctx context.Context, p *population) error {
			if err := createD(ctx, p, deployment("d-history", 2, nil)); err != nil {
				return err
			}
			if err := setTemplate(ctx, p, "deployments", "d-history", 1, nil); err != nil {
				return err
			}
			if err := waitFor(ctx, p, "v1 rolled out", completeDeployment("d-history")); err != nil {
				return err
			}
			// An undo, as kubectl does it: revision 1's template back on the Deployment.
			if err := patch(ctx, p, "deployments", "d-history", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.25.0"}]}}}}`); err != nil {
				return err
			}
			return waitFor(ctx, p, "the undo rolled out", func(ctx context.Context, p *population) (bool, string) {
				ok, state := deploymentComplete(ctx, p, "d-history")
				rs := newReplicaSetOf(ctx, p, "d-history", "nginx:1.25.0")
				return ok && rs != nil && rs.Annotations["deployment.kubernetes.io/revision-history"] == "1", state
			})
		}},
		{name: "d-scaled", kind: "Deployment", state: "scaled 2 → 4 (scale subresource)", setup: func(ctx context.Context, p *population) error {
			if err := createD(ctx, p, deployment("d-scaled", 2, nil)); err != nil {
				return err
			}
			if _, err := p.client.AppsV1().Deployments(p.ns).UpdateScale(ctx, "d-scaled", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d-scaled", Namespace: p.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, metav1.UpdateOptions{}); err != nil {
				return err
			}
			return waitFor(ctx, p, "4 replicas", completeDeployment("d-scaled"))
		}},
		{name: "d-orphan", kind: "Deployment", state: "orphaned ReplicaSet to adopt", inFlight: true, done: completeDeployment("d-orphan"),
			setup: func(ctx context.Context, p *population) error {
				if err := createD(ctx, p, deployment("d-orphan", 2, nil)); err != nil {
					return err
				}
				if err := p.client.AppsV1().Deployments(p.ns).Delete(ctx, "d-orphan", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
					return err
				}
				return waitFor(ctx, p, "the ReplicaSet orphaned", func(ctx context.Context, p *population) (bool, string) {
					rs := newReplicaSetOf(ctx, p, "d-orphan", "nginx:1.25.0")
					_, err := p.client.AppsV1().Deployments(p.ns).Get(ctx, "d-orphan", metav1.GetOptions{})
					return rs != nil && len(rs.OwnerReferences) == 0 && err != nil, fmt.Sprintf("deployment: %v", err)
				})
			},
			gap: func(ctx context.Context, p *population) error {
				_, err := p.client.AppsV1().Deployments(p.ns).Create(ctx, deployment("d-orphan", 2, nil), metav1.CreateOptions{})
				return err
			}},
		{name: "d-prune", kind: "Deployment", state: "revisionHistoryLimit pruning due", inFlight: true,
			done: func(ctx context.Context, p *population) (bool, string) {
				rss, err := p.client.AppsV1().ReplicaSets(p.ns).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=d-prune"})
				if err != nil {
					return false, err.Error()
				}
				ok, state := deploymentComplete(ctx, p, "d-prune")
				return ok && len(rss.Items) == 2, fmt.Sprintf("%s, %d ReplicaSets", state, len(rss.Items))
			},
			setup: func(ctx context.Context, p *population) error {
				if err := createD(ctx, p, deployment("d-prune", 2, func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](5) })); err != nil {
					return err
				}
				for v := 1; v <= 3; v++ {
					if err := setTemplate(ctx, p, "deployments", "d-prune", v, nil); err != nil {
						return err
					}
					if err := waitFor(ctx, p, fmt.Sprintf("v%d rolled out", v), func(ctx context.Context, p *population) (bool, string) {
						ok, state := deploymentComplete(ctx, p, "d-prune")
						return ok && newReplicaSetOf(ctx, p, "d-prune", fmt.Sprintf("nginx:1.25.%d", v)) != nil, state
					}); err != nil {
						return err
					}
				}
				return nil
			},
			gap: func(ctx context.Context, p *population) error {
				return patch(ctx, p, "deployments", "d-prune", `{"spec":{"revisionHistoryLimit":1}}`)
			}},
		{name: "rs-bare", kind: "ReplicaSet", state: "bare", setup: func(ctx context.Context, p *population) error {
			rs := &appsv1.ReplicaSet{ObjectMeta: objectMeta("rs-bare"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: selector("rs-bare"), Template: template("rs-bare", 0, nil)}}
			if _, err := p.client.AppsV1().ReplicaSets(p.ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				return err
			}
			return waitFor(ctx, p, "3 available", func(ctx context.Context, p *population) (bool, string) {
				rs, err := p.client.AppsV1().ReplicaSets(p.ns).Get(ctx, "rs-bare", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return rs.Status.AvailableReplicas == 3 && rs.Status.ObservedGeneration == rs.Generation, fmt.Sprintf("%+v", rs.Status)
			})
		}},
		{name: "rc-bare", kind: "ReplicationController", state: "bare", setup: func(ctx context.Context, p *population) error {
			tmpl := template("rc-bare", 0, nil)
			rc := &corev1.ReplicationController{ObjectMeta: objectMeta("rc-bare"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](3), Selector: map[string]string{workloadLabel: "rc-bare"}, Template: &tmpl}}
			if _, err := p.client.CoreV1().ReplicationControllers(p.ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
				return err
			}
			return waitFor(ctx, p, "3 available", func(ctx context.Context, p *population) (bool, string) {
				rc, err := p.client.CoreV1().ReplicationControllers(p.ns).Get(ctx, "rc-bare", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return rc.Status.AvailableReplicas == 3 && rc.Status.ObservedGeneration == rc.Generation, fmt.Sprintf("%+v", rc.Status)
			})
		}},
		{name: "ss-ordered", kind: "StatefulSet", state: "OrderedReady mid-RollingUpdate", inFlight: true, done: statefulSetRolled("ss-ordered"),
			setup: func(ctx context.Context, p *population) error {
				if err := createS(ctx, p, statefulSet("ss-ordered", 3, nil)); err != nil {
					return err
				}
				if err := setTemplate(ctx, p, "statefulsets", "ss-ordered", 1, slow(4*time.Second)); err != nil {
					return err
				}
				return waitFor(ctx, p, "the first pod updated", func(ctx context.Context, p *population) (bool, string) {
					pod, err := p.client.CoreV1().Pods(p.ns).Get(ctx, "ss-ordered-2", metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return pod.Spec.Containers[0].Image == "nginx:1.25.1", pod.Spec.Containers[0].Image
				})
			}},
		{name: "ss-parallel", kind: "StatefulSet", state: "Parallel, complete", setup: func(ctx context.Context, p *population) error {
			return createS(ctx, p, statefulSet("ss-parallel", 3, func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }))
		}},
		{name: "ss-partition", kind: "StatefulSet", state: "partitioned at 2 of 3", setup: func(ctx context.Context, p *population) error {
			if err := createS(ctx, p, statefulSet("ss-partition", 3, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
			})); err != nil {
				return err
			}
			if err := setTemplate(ctx, p, "statefulsets", "ss-partition", 1, nil); err != nil {
				return err
			}
			return waitFor(ctx, p, "ordinal 2 updated", func(ctx context.Context, p *population) (bool, string) {
				return statefulSetSettled(ctx, p, "ss-partition", 1)
			})
		}},
		{name: "ss-ondelete", kind: "StatefulSet", state: "OnDelete with stale pods", setup: func(ctx context.Context, p *population) error {
			if err := createS(ctx, p, statefulSet("ss-ondelete", 2, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			})); err != nil {
				return err
			}
			if err := setTemplate(ctx, p, "statefulsets", "ss-ondelete", 1, nil); err != nil {
				return err
			}
			return waitFor(ctx, p, "the new revision observed", func(ctx context.Context, p *population) (bool, string) {
				return statefulSetSettled(ctx, p, "ss-ondelete", 0)
			})
		}},
		{name: "ss-claims", kind: "StatefulSet", state: "with volumeClaimTemplates", setup: func(ctx context.Context, p *population) error {
			return createS(ctx, p, statefulSet("ss-claims", 2, func(s *appsv1.StatefulSet) {
				s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{workloadLabel: "ss-claims"}},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					},
				}}
				s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			}))
		}},
		{name: "ds-surge", kind: "DaemonSet", state: "mid-RollingUpdate with maxSurge", inFlight: true, done: daemonSetRolled("ds-surge"),
			setup: func(ctx context.Context, p *population) error {
				if err := createDS(ctx, p, daemonSet("ds-surge", func(s *appsv1.DaemonSet) {
					s.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
						MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					}}
				})); err != nil {
					return err
				}
				if err := setTemplate(ctx, p, "daemonsets", "ds-surge", 1, slow(4*time.Second)); err != nil {
					return err
				}
				return waitFor(ctx, p, "the first surge pod", func(ctx context.Context, p *population) (bool, string) {
					pods, err := p.client.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=ds-surge"})
					if err != nil {
						return false, err.Error()
					}
					return len(pods.Items) == 4, fmt.Sprintf("%d pods", len(pods.Items))
				})
			}},
		{name: "ds-ondelete", kind: "DaemonSet", state: "OnDelete with stale pods", setup: func(ctx context.Context, p *population) error {
			if err := createDS(ctx, p, daemonSet("ds-ondelete", func(s *appsv1.DaemonSet) {
				s.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
			})); err != nil {
				return err
			}
			if err := setTemplate(ctx, p, "daemonsets", "ds-ondelete", 1, nil); err != nil {
				return err
			}
			return waitFor(ctx, p, "the new revision observed", func(ctx context.Context, p *population) (bool, string) {
				return daemonSetSettled(ctx, p, "ds-ondelete", 0)
			})
		}},
	}
}
