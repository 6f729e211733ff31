package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kroll-dev/kroll/pkg/rolloutview"
)

// workloadKind is one of the kinds kroll's rollout views work on.
type workloadKind string

const (
	kindDeployment  workloadKind = "deployment"
	kindStatefulSet workloadKind = "statefulset"
	kindDaemonSet   workloadKind = "daemonset"
)

// kindAliases are the names kubectl accepts for each kind.
var kindAliases = map[string]workloadKind{
	"deployment": kindDeployment, "deployments": kindDeployment, "deploy": kindDeployment,
	"statefulset": kindStatefulSet, "statefulsets": kindStatefulSet, "sts": kindStatefulSet,
	"daemonset": kindDaemonSet, "daemonsets": kindDaemonSet, "ds": kindDaemonSet,
}

// workloadRef names one workload: KIND/NAME or KIND NAME, as kubectl takes them.
type workloadRef struct {
	kind      workloadKind
	namespace string
	name      string
}

func (r workloadRef) String() string { return string(r.kind) + "/" + r.name }

// parseWorkloadRef reads KIND/NAME (or KIND NAME) from the front of args and returns
// the rest.
func parseWorkloadRef(args []string, namespace string) (workloadRef, []string, error) {
	if len(args) == 0 {
		return workloadRef{}, nil, fmt.Errorf("name a workload: KIND/NAME, e.g. deployment/web")
	}
	kind, name, slash := strings.Cut(args[0], "/")
	rest := args[1:]
	if !slash {
		if len(rest) == 0 {
			return workloadRef{}, nil, fmt.Errorf("name a workload: KIND/NAME, e.g. deployment/%s", args[0])
		}
		name, rest = rest[0], rest[1:]
	}
	k, ok := kindAliases[strings.ToLower(strings.TrimSuffix(kind, ".apps"))]
	if !ok {
		return workloadRef{}, nil, fmt.Errorf("unknown kind %q: rollouts are of deployment, statefulset or daemonset", kind)
	}
	if name == "" {
		return workloadRef{}, nil, fmt.Errorf("name a workload: %s/NAME", k)
	}
	return workloadRef{kind: k, namespace: namespace, name: name}, rest, nil
}

// get reads the workload itself; not found is one line naming it.
func (r workloadRef) get(ctx context.Context, client kubernetes.Interface) (runtime.Object, error) {
	var obj runtime.Object
	var err error
	apps := client.AppsV1()
	switch r.kind {
	case kindDeployment:
		obj, err = apps.Deployments(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	case kindStatefulSet:
		obj, err = apps.StatefulSets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	case kindDaemonSet:
		obj, err = apps.DaemonSets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s not found in namespace %q", r, r.namespace)
	}
	return obj, err
}

// owned is what `kroll status` lists once and picks each workload's own from.
type owned = rolloutview.Owned

// listOwned lists what workloads of kind in namespace ("" for all) own, narrowed to
// selector when there is one.
func listOwned(ctx context.Context, client kubernetes.Interface, namespace string, kind workloadKind, selector labels.Selector) (owned, error) {
	opts := metav1.ListOptions{}
	if selector != nil {
		opts.LabelSelector = selector.String()
	}
	var o owned
	if kind == "" || kind == kindDeployment {
		rss, err := client.AppsV1().ReplicaSets(namespace).List(ctx, opts)
		if err != nil {
			return o, err
		}
		o.ReplicaSets = pointers(rss.Items)
	}
	if kind == "" || kind != kindDeployment {
		revs, err := client.AppsV1().ControllerRevisions(namespace).List(ctx, opts)
		if err != nil {
			return o, err
		}
		o.Revisions = pointers(revs.Items)
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return o, err
	}
	o.Pods = pointers(pods.Items)
	if kind == "" || kind == kindDaemonSet {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return o, fmt.Errorf("listing nodes (a DaemonSet's rollout counts nodes): %w", err)
		}
		o.Nodes = pointers(nodes.Items)
	}
	return o, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// selectorOf is the workload's pod selector, which its ReplicaSets, revisions and pods
// all carry.
func selectorOf(obj runtime.Object) (labels.Selector, error) {
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel = o.Spec.Selector
	case *appsv1.StatefulSet:
		sel = o.Spec.Selector
	case *appsv1.DaemonSet:
		sel = o.Spec.Selector
	}
	return metav1.LabelSelectorAsSelector(sel)
}

// snapshot reads r and what it owns now.
func (r workloadRef) snapshot(ctx context.Context, client kubernetes.Interface) (rolloutview.Snapshot, error) {
	obj, err := r.get(ctx, client)
	if err != nil {
		return rolloutview.Snapshot{}, err
	}
	return r.snapshotOf(ctx, client, obj)
}

// snapshotOf is the snapshot of obj, r as just read, with what it owns now.
func (r workloadRef) snapshotOf(ctx context.Context, client kubernetes.Interface, obj runtime.Object) (rolloutview.Snapshot, error) {
	sel, err := selectorOf(obj)
	if err != nil {
		return rolloutview.Snapshot{}, err
	}
	o, err := listOwned(ctx, client, r.namespace, r.kind, sel)
	if err != nil {
		return rolloutview.Snapshot{}, err
	}
	return o.SnapshotOf(obj, time.Now()), nil
}

// watchSnapshots calls onChange with a fresh snapshot of r whenever r or anything it
// owns changes (at most every 100 ms), until onChange says stop, returns an error, or
// ctx ends. It watches through informers narrowed to r's name and selector.
func (r workloadRef) watchSnapshots(ctx context.Context, client kubernetes.Interface, onChange func(rolloutview.Snapshot) (stop bool, err error)) error {
	obj, err := r.get(ctx, client)
	if err != nil {
		return err
	}
	sel, err := selectorOf(obj)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	byName := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(r.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", r.name).String()
		}))
	bySelector := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(r.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))

	changed := make(chan struct{}, 1)
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify(changed) },
		UpdateFunc: func(any, any) { notify(changed) },
		DeleteFunc: func(any) { notify(changed) },
	}
	// Only the informers made here are started: self, the holders of r's revisions
	// (ReplicaSets or ControllerRevisions) and pods.
	var self, holders cache.SharedIndexInformer
	switch r.kind {
	case kindDeployment:
		self, holders = byName.Apps().V1().Deployments().Informer(), bySelector.Apps().V1().ReplicaSets().Informer()
	case kindStatefulSet:
		self, holders = byName.Apps().V1().StatefulSets().Informer(), bySelector.Apps().V1().ControllerRevisions().Informer()
	case kindDaemonSet:
		self, holders = byName.Apps().V1().DaemonSets().Informer(), bySelector.Apps().V1().ControllerRevisions().Informer()
	}
	pods := bySelector.Core().V1().Pods().Informer()
	watched := []cache.SharedIndexInformer{self, holders, pods}
	// A DaemonSet's staged rollout counts the nodes its template should run on.
	cluster := informers.NewSharedInformerFactory(client, 0)
	var nodes cache.SharedIndexInformer
	if r.kind == kindDaemonSet {
		nodes = cluster.Core().V1().Nodes().Informer()
		watched = append(watched, nodes)
	}
	for _, inf := range watched {
		if _, err := inf.AddEventHandler(poke); err != nil {
			return err
		}
	}
	byName.Start(ctx.Done())
	bySelector.Start(ctx.Done())
	cluster.Start(ctx.Done())
	defer func() {
		// Shutdown waits for the informers, which stop with ctx.
		cancel()
		byName.Shutdown()
		bySelector.Shutdown()
		cluster.Shutdown()
	}()
	// An informer that cannot list (RBAC) never syncs: wait at most a minute, then say so.
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	for _, f := range []informers.SharedInformerFactory{byName, bySelector, cluster} {
		for typ, synced := range f.WaitForCacheSync(syncCtx.Done()) {
			if !synced && ctx.Err() == nil {
				return fmt.Errorf("watching %s: could not list %v within a minute; can this user list and watch them?", r, typ)
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
		items := self.GetStore().List()
		if len(items) == 0 {
			return fmt.Errorf("%s was deleted", r)
		}
		var o owned
		for _, x := range holders.GetStore().List() {
			switch h := x.(type) {
			case *appsv1.ReplicaSet:
				o.ReplicaSets = append(o.ReplicaSets, h)
			case *appsv1.ControllerRevision:
				o.Revisions = append(o.Revisions, h)
			}
		}
		for _, x := range pods.GetStore().List() {
			o.Pods = append(o.Pods, x.(*corev1.Pod))
		}
		if nodes != nil {
			for _, x := range nodes.GetStore().List() {
				o.Nodes = append(o.Nodes, x.(*corev1.Node))
			}
		}
		stop, err := onChange(o.SnapshotOf(items[0].(runtime.Object), time.Now()))
		if stop || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
