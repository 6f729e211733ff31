package manager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Preflight checks, before any controller starts, what would make running them wrong
// or useless, and returns the first as one line naming the object and what to do:
//   - a resource the controllers read that this identity may not list or watch
//     (checked with a list of one item and a watch closed at once: reads only, so a dry
//     run with a read-only role stays write-free; a SelfSubjectAccessReview is a create);
//   - unless force, kube-controller-manager still running its workload controllers
//     (upstreamStillRunning).
//
// A dry run is not refused for the second: it writes nothing, and it is what an
// operator runs before switching upstream's controllers off. It gets the evidence back
// as note, for its report. dryRun also adds the kinds a dry run reads to attribute
// writes.
func Preflight(ctx context.Context, cfg *rest.Config, opts Options, dryRun, force bool) (note string, err error) {
	enabled, err := EnabledControllers(opts.Controllers)
	if err != nil {
		return "", err
	}
	c := rest.CopyConfig(cfg)
	c.Timeout = 15 * time.Second
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(c, "kroll/preflight"))
	if err != nil {
		return "", err
	}
	for _, r := range resourcesRead(enabled, dryRun) {
		if err := canRead(ctx, client, r); err != nil {
			return "", err
		}
	}
	if force {
		return "", nil
	}
	meta, err := metadata.NewForConfig(rest.AddUserAgent(c, "kroll/preflight"))
	if err != nil {
		return "", err
	}
	evidence := upstreamStillRunning(ctx, client, meta, time.Now())
	switch {
	case evidence == "":
		return "", nil
	case dryRun:
		// A dry run writes nothing, so it may run beside upstream's controllers: it is
		// the check made before switching them off. Its report says they run.
		return fmt.Sprintf("kube-controller-manager still runs its workload controllers (%s): "+
			"the writes below are those kroll would make if it took over now", evidence), nil
	}
	return "", fmt.Errorf("kube-controller-manager still runs its workload controllers: %s; %s", evidence, switchOff)
}

// apiResource is a resource the controllers list and watch cluster-wide.
type apiResource struct{ group, version, resource string }

func (r apiResource) String() string {
	if r.group == "" {
		return r.resource
	}
	return r.resource + "." + r.group
}

var (
	deploymentsRes  = apiResource{"apps", "v1", "deployments"}
	replicaSetsRes  = apiResource{"apps", "v1", "replicasets"}
	statefulSetsRes = apiResource{"apps", "v1", "statefulsets"}
	daemonSetsRes   = apiResource{"apps", "v1", "daemonsets"}
	revisionsRes    = apiResource{"apps", "v1", "controllerrevisions"}
	podsRes         = apiResource{"", "v1", "pods"}
	nodesRes        = apiResource{"", "v1", "nodes"}
	rcsRes          = apiResource{"", "v1", "replicationcontrollers"}
	claimsRes       = apiResource{"", "v1", "persistentvolumeclaims"}
	pdbsRes         = apiResource{"policy", "v1", "poddisruptionbudgets"}
)

// resourcesRead lists what the enabled controllers' informers read (and, in a dry
// run, the kinds it attributes writes through), each once, in a stable order.
func resourcesRead(enabled []string, dryRun bool) []apiResource {
	reads := map[string][]apiResource{
		Deployment:            {deploymentsRes, replicaSetsRes, podsRes, nodesRes, pdbsRes},
		ReplicaSet:            {replicaSetsRes, podsRes, deploymentsRes, pdbsRes},
		ReplicationController: {rcsRes, podsRes},
		StatefulSet:           {statefulSetsRes, podsRes, nodesRes, revisionsRes, claimsRes, pdbsRes},
		DaemonSet:             {daemonSetsRes, podsRes, nodesRes, revisionsRes, pdbsRes},
	}
	var out []apiResource
	add := func(rs ...apiResource) {
		for _, r := range rs {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	for _, name := range enabled {
		add(reads[name]...)
	}
	if dryRun {
		add(deploymentsRes, replicaSetsRes, rcsRes, statefulSetsRes, daemonSetsRes, podsRes, revisionsRes)
	}
	return out
}

// canRead lists one item of r and opens (and closes) a watch on it, cluster-wide.
func canRead(ctx context.Context, client kubernetes.Interface, r apiResource) error {
	path := "/api/" + r.version + "/" + r.resource
	if r.group != "" {
		path = "/apis/" + r.group + "/" + r.version + "/" + r.resource
	}
	rc := client.Discovery().RESTClient()
	refused := func(verb string, err error) error {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return fmt.Errorf("no permission to %s %s in all namespaces (%s); grant get, list and watch on it (see deploy/rbac.yaml)",
				verb, r, forbiddenWhom(err.Error()))
		}
		return fmt.Errorf("cannot %s %s: %v", verb, r, err)
	}
	if err := rc.Get().AbsPath(path).Param("limit", "1").Do(ctx).Error(); err != nil {
		return refused("list", err)
	}
	// A watch answers its headers at once when allowed; nothing needs to arrive.
	stream, err := rc.Get().AbsPath(path).Param("watch", "true").Param("timeoutSeconds", "1").Param("resourceVersion", "0").Stream(ctx)
	if err != nil {
		return refused("watch", err)
	}
	return stream.Close()
}

// forbiddenWhom is the part of the API server's refusal that names the user:
// `deployments.apps is forbidden: User "x" cannot list resource …` gives `User "x"
// cannot list resource …`.
func forbiddenWhom(msg string) string {
	if _, after, ok := strings.Cut(msg, "forbidden: "); ok {
		return after
	}
	return msg
}

// The Lease kube-controller-manager leads by, and the component label of its pod where
// kubeadm runs it as a static pod.
const (
	upstreamLeaseNamespace = "kube-system"
	upstreamLeaseName      = "kube-controller-manager"
	upstreamManager        = "kube-controller-manager"
)

// switchOff is how to turn upstream's workload controllers off, for the refusal.
const switchOff = "start kube-controller-manager with --controllers=*,-deployment-controller,-replicaset-controller," +
	"-replicationcontroller-controller,-statefulset-controller,-daemonset-controller (see deploy/README.md), or pass --force"

// upstreamStillRunning is the evidence that kube-controller-manager leads (its Lease is
// held and was renewed within its duration) and runs workload controllers: its pod's
// --controllers leaves one of them on, or it wrote a workload recently; "" when there
// is none. A Lease this identity may not read, or no Lease, is none: managed clusters
// hide their control plane.
func upstreamStillRunning(ctx context.Context, client kubernetes.Interface, meta metadata.Interface, now time.Time) string {
	logger := klog.FromContext(ctx)
	lease, err := client.CoordinationV1().Leases(upstreamLeaseNamespace).Get(ctx, upstreamLeaseName, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			logger.Info("Not checking for kube-controller-manager's workload controllers: cannot read its Lease",
				"lease", upstreamLeaseNamespace+"/"+upstreamLeaseName, "err", err)
		}
		return ""
	}
	held, since := leaseHeld(lease, now)
	if !held {
		return ""
	}
	var evidence []string
	pods, err := client.CoreV1().Pods(upstreamLeaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
	if err == nil {
		for _, p := range pods.Items {
			if on := workloadControllersOn(commandLine(&p)); len(on) > 0 {
				evidence = append(evidence, fmt.Sprintf("pod %s/%s runs %s", p.Namespace, p.Name, strings.Join(on, ", ")))
				break
			}
		}
	}
	if len(evidence) == 0 {
		if w := recentUpstreamWrite(ctx, meta, since); w != "" {
			evidence = append(evidence, w)
		}
	}
	if len(evidence) == 0 {
		return ""
	}
	return fmt.Sprintf("Lease %s/%s held by %s (renewed %s ago) and %s",
		upstreamLeaseNamespace, upstreamLeaseName, deref(lease.Spec.HolderIdentity), now.Sub(lease.Spec.RenewTime.Time).Round(time.Second),
		strings.Join(evidence, "; "))
}

// leaseHeld tells whether l has a holder that renewed it within its duration at now,
// and since when a write by that leader counts as recent: one lease duration before
// its last renewal (a leader renews every retry period, 2s by default, so that window
// covers what it did while it last held the lease for certain).
func leaseHeld(l *coordinationv1.Lease, now time.Time) (held bool, since time.Time) {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false, time.Time{}
	}
	d := time.Duration(*s.LeaseDurationSeconds) * time.Second
	if now.After(s.RenewTime.Add(d)) {
		return false, time.Time{}
	}
	return true, s.RenewTime.Add(-d)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// commandLine is the command and arguments of p's kube-controller-manager container
// (its first container otherwise).
func commandLine(p *corev1.Pod) []string {
	for _, c := range p.Spec.Containers {
		if c.Name == upstreamManager || len(p.Spec.Containers) == 1 {
			return append(slices.Clone(c.Command), c.Args...)
		}
	}
	return nil
}

// upstreamWorkloadControllers are kube-controller-manager's names for the controllers
// kroll replaces, each with the alias its --controllers also accepts.
var upstreamWorkloadControllers = [][2]string{
	{"deployment-controller", "deployment"}, {"replicaset-controller", "replicaset"},
	{"replicationcontroller-controller", "replicationcontroller"}, {"statefulset-controller", "statefulset"},
	{"daemonset-controller", "daemonset"},
}

// workloadControllersOn reads a kube-controller-manager command line's --controllers
// (default "*") as it does: a controller runs when named, not when named with "-",
// and otherwise when "*" is in the list (all five are on by default). It returns the
// workload controllers that run, in upstream's names.
func workloadControllersOn(args []string) []string {
	list := "*"
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--controllers="):
			list = strings.TrimPrefix(a, "--controllers=")
		case a == "--controllers" && i+1 < len(args):
			list = args[i+1]
		}
	}
	items := strings.Split(list, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	var on []string
	for _, c := range upstreamWorkloadControllers {
		named := slices.Contains(items, c[0]) || slices.Contains(items, c[1])
		off := slices.Contains(items, "-"+c[0]) || slices.Contains(items, "-"+c[1])
		if named || (!off && slices.Contains(items, "*")) {
			on = append(on, c[0])
		}
	}
	return on
}

// recentUpstreamWrite names a workload kube-controller-manager wrote since since, by
// its managedFields, or "" when it wrote none. It lists each workload kind's metadata
// once, in pages of 500, with the managedFields the informers drop.
func recentUpstreamWrite(ctx context.Context, client metadata.Interface, since time.Time) string {
	for _, r := range []apiResource{deploymentsRes, replicaSetsRes, statefulSetsRes, daemonSetsRes} {
		gvr := schema.GroupVersionResource{Group: r.group, Version: r.version, Resource: r.resource}
		cont := ""
		for page := 0; page < 100; page++ {
			l, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				break
			}
			for _, m := range l.Items {
				if at, ok := upstreamWroteSince(m.ManagedFields, since); ok {
					return fmt.Sprintf("it wrote %s %s/%s at %s", kindOf(r.resource), m.Namespace, m.Name, at.UTC().Format(time.RFC3339))
				}
			}
			if cont = l.Continue; cont == "" {
				break
			}
		}
	}
	return ""
}

// upstreamWroteSince tells whether managedFields record a write by a workload
// controller of kube-controller-manager at or after since: an entry of manager
// "kube-controller-manager" that owns spec or status fields, not through the scale
// subresource. That leaves out the other controllers of the same process, which a
// cluster running kroll keeps: the garbage collector (owner references only) and the
// horizontal pod autoscaler (scale).
func upstreamWroteSince(fields []metav1.ManagedFieldsEntry, since time.Time) (time.Time, bool) {
	for _, f := range fields {
		if f.Manager != upstreamManager || f.Subresource == "scale" || f.Time == nil || f.Time.Time.Before(since) || f.FieldsV1 == nil {
			continue
		}
		raw := string(f.FieldsV1.Raw)
		if strings.Contains(raw, `"f:status"`) || strings.Contains(raw, `"f:spec"`) {
			return f.Time.Time, true
		}
	}
	return time.Time{}, false
}
