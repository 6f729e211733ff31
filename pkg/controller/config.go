package controller

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kroll-dev/kroll/pkg/analysis"
	"github.com/kroll-dev/kroll/pkg/configrollout"
	"github.com/kroll-dev/kroll/pkg/failure"
)

// Configuration rollout (kroll.dev/config-rollout, design in pkg/configrollout) as
// every workload controller does it: the caches it reads, the index that wakes the
// workloads referencing a ConfigMap or Secret, the snapshot writes, and the
// ConfigRollout condition. What differs by kind — where a revision keeps its
// snapshots, who owns them — stays with the kind's controller.

// configIndex indexes workloads by "<namespace>/configmap/<name>" and
// "<namespace>/secret/<name>" of what their template references (opted-in ones) and
// of the ConfigMap their kroll.dev/analysis names, so that a ConfigMap's change
// wakes them alone.
const configIndex = "kroll.dev/config-refs"

// SnapshotWriter writes configuration snapshots.
type SnapshotWriter interface {
	CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) error
	CreateSecret(ctx context.Context, s *corev1.Secret) error
}

// APISnapshotWriter writes snapshots through the API server.
type APISnapshotWriter struct{ Client kubernetes.Interface }

var _ SnapshotWriter = APISnapshotWriter{}

// CreateConfigMap creates cm.
func (w APISnapshotWriter) CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	_, err := w.Client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// CreateSecret creates s.
func (w APISnapshotWriter) CreateSecret(ctx context.Context, s *corev1.Secret) error {
	_, err := w.Client.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	return err
}

// ConfigSource is the caches configuration rollout reads and the writer of its
// snapshots.
type ConfigSource struct {
	ConfigMaps corelisters.ConfigMapLister
	Secrets    corelisters.SecretLister
	Writer     SnapshotWriter
}

// WatchConfig makes the ConfigSource of a controller whose workloads owners informs
// of: it indexes them by what they reference (ConfigRefs) and enqueues those that
// reference a ConfigMap or Secret when it is created, its data changes, or it is
// deleted. synced gains the two informers. Call before the informers start.
func WatchConfig(client kubernetes.Interface, owners cache.SharedIndexInformer, cmInformer coreinformers.ConfigMapInformer,
	secretInformer coreinformers.SecretInformer, enqueue func(obj any), synced *[]cache.InformerSynced) (*ConfigSource, error) {
	if err := owners.AddIndexers(cache.Indexers{configIndex: ConfigRefs}); err != nil {
		return nil, err
	}
	index := owners.GetIndexer()
	changed := func(obj any) {
		key := configKey(obj)
		if key == "" {
			return
		}
		objs, _ := index.ByIndex(configIndex, key)
		for _, o := range objs {
			enqueue(o)
		}
	}
	for _, inf := range []cache.SharedIndexInformer{cmInformer.Informer(), secretInformer.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: changed,
			UpdateFunc: func(old, cur any) {
				if dataChanged(old, cur) {
					changed(cur)
				}
			},
			DeleteFunc: changed,
		}); err != nil {
			return nil, err
		}
	}
	*synced = append(*synced, cmInformer.Informer().HasSynced, secretInformer.Informer().HasSynced)
	return &ConfigSource{ConfigMaps: cmInformer.Lister(), Secrets: secretInformer.Lister(), Writer: APISnapshotWriter{Client: client}}, nil
}

// ConfigRefs indexes a Deployment, StatefulSet or DaemonSet by what its template
// references, when it is opted in, and by the ConfigMap of its analysis checks: an
// analyze step held because that ConfigMap is missing or does not parse is judged
// once it is fixed, and a step running with the old checks starts afresh with the
// new ones at once, not at its next measurement.
func ConfigRefs(obj any) ([]string, error) {
	var meta metav1.Object
	var spec *corev1.PodSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, spec = o, &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		meta, spec = o, &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		meta, spec = o, &o.Spec.Template.Spec
	default:
		return nil, nil
	}
	var keys []string
	if name := meta.GetAnnotations()[analysis.Annotation]; name != "" {
		keys = append(keys, meta.GetNamespace()+"/"+configrollout.Ref{Kind: configrollout.ConfigMap, Name: name}.Key())
	}
	if on, _ := configrollout.Enabled(meta.GetAnnotations()); !on {
		return keys, nil
	}
	for _, r := range configrollout.Refs(spec) {
		keys = append(keys, meta.GetNamespace()+"/"+r.Key())
	}
	return keys, nil
}

// configKey is the configIndex key of a ConfigMap or Secret, "" for a snapshot (its
// creation wakes no one: nothing references it by name) or another object.
func configKey(obj any) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if _, snap := o.Labels[configrollout.SnapshotOfLabel]; !snap {
			return o.Namespace + "/" + string(configrollout.ConfigMap) + "/" + o.Name
		}
	case *corev1.Secret:
		if _, snap := o.Labels[configrollout.SnapshotOfLabel]; !snap {
			return o.Namespace + "/" + string(configrollout.Secret) + "/" + o.Name
		}
	case cache.DeletedFinalStateUnknown:
		return configKey(o.Obj)
	}
	return ""
}

// dataChanged tells an update of a ConfigMap's or Secret's data from one of its
// metadata alone, which rolls nothing.
func dataChanged(old, cur any) bool {
	switch o := cur.(type) {
	case *corev1.ConfigMap:
		prev, ok := old.(*corev1.ConfigMap)
		return !ok || configrollout.ConfigMapHash(prev) != configrollout.ConfigMapHash(o)
	case *corev1.Secret:
		prev, ok := old.(*corev1.Secret)
		return !ok || configrollout.SecretHash(prev) != configrollout.SecretHash(o)
	}
	return true
}

// ConfigFound is the configuration of a template as the caches show it now: its
// resolution, and the objects hashed, from which snapshots are copied.
type ConfigFound struct {
	configrollout.Resolved
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// Resolve finds what spec references in namespace and fingerprints it.
func (s *ConfigSource) Resolve(namespace string, spec *corev1.PodSpec) ConfigFound {
	f := ConfigFound{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	f.Resolved = configrollout.Resolve(configrollout.Refs(spec), func(r configrollout.Ref) (string, bool) {
		if r.Kind == configrollout.ConfigMap {
			cm, err := s.ConfigMaps.ConfigMaps(namespace).Get(r.Name)
			if err != nil {
				return "", false
			}
			f.configMaps[r.Name] = cm
			return configrollout.ConfigMapHash(cm), true
		}
		sec, err := s.Secrets.Secrets(namespace).Get(r.Name)
		if err != nil {
			return "", false
		}
		f.secrets[r.Name] = sec
		return configrollout.SecretHash(sec), true
	})
	return f
}

// WriteSnapshots creates the snapshots of snaps (a revision's record) that the cache
// does not show yet, in namespace, copied from the objects found, owned by owner (a
// ReplicaSet or a ControllerRevision: garbage-collected with it). A source whose data
// is no longer the revision's is skipped (the revision's pods wait, as for a missing
// object). A write refused (quota, RBAC) stops it: problem is the one line for the
// ConfigRollout condition and its event, naming the snapshot, the object and revision.
func (s *ConfigSource) WriteSnapshots(ctx context.Context, namespace string, snaps configrollout.Snapshots, found ConfigFound,
	owner metav1.OwnerReference) (problem string, err error) {
	// No blockOwnerDeletion: setting it needs the right to update the owner's
	// finalizers, which the snapshot's life does not.
	owner.BlockOwnerDeletion = nil
	for _, key := range slices.Sorted(maps.Keys(snaps)) {
		snap := snaps[key]
		kind, name, _ := strings.Cut(key, "/")
		switch configrollout.Kind(kind) {
		case configrollout.ConfigMap:
			if _, gerr := s.ConfigMaps.ConfigMaps(namespace).Get(snap.Name); gerr == nil {
				continue
			}
			src := found.configMaps[name]
			if src == nil || configrollout.ConfigMapHash(src) != snap.Hash {
				continue
			}
			err = s.Writer.CreateConfigMap(ctx, configrollout.ConfigMapSnapshot(src, snap.Name, owner))
		case configrollout.Secret:
			if _, gerr := s.Secrets.Secrets(namespace).Get(snap.Name); gerr == nil {
				continue
			}
			src := found.secrets[name]
			if src == nil || configrollout.SecretHash(src) != snap.Hash {
				continue
			}
			err = s.Writer.CreateSecret(ctx, configrollout.SecretSnapshot(src, snap.Name, owner))
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return "cannot write the snapshot " + snap.Name + " of " + key + " for " + strings.ToLower(owner.Kind) + " " + owner.Name + ": " + err.Error() + "; the rollout waits", err
		}
	}
	return "", nil
}

// WithConfigCondition is conds with the ConfigRollout condition brought up to date:
// False with reason and problem while configuration rollout has a problem (kept as it
// is, transition time included, when it says the same), gone otherwise.
func WithConfigCondition[C any](k failure.Conditions[C], conds []C, problem, reason string, now time.Time) []C {
	var out []C
	var cur *failure.Condition
	for _, c := range conds {
		if v := k.View(c); v.Type == configrollout.ConditionType {
			cur = &v
			continue
		}
		out = append(out, c)
	}
	if problem == "" {
		return out
	}
	if cur == nil || cur.Status != corev1.ConditionFalse || cur.Reason != reason || cur.Message != problem {
		cur = &failure.Condition{Type: configrollout.ConditionType, Status: corev1.ConditionFalse, Reason: reason, Message: problem,
			LastTransitionTime: metav1.NewTime(now)}
	}
	return append(out, k.Make(*cur))
}

// ConfigReports keeps the Warning events of configuration problems to one per
// distinct problem per workload, until its ConfigRollout condition shows it.
type ConfigReports struct {
	mu   sync.Mutex
	sent map[types.UID]string
}

// Report records a Warning event (reason) for problem on obj unless it was reported
// last or shown (the message of obj's ConfigRollout condition now) says it; ""
// forgets what was reported.
func (r *ConfigReports) Report(recorder record.EventRecorder, obj runtime.Object, uid types.UID, problem, reason, shown string) {
	r.mu.Lock()
	if problem == "" || problem == shown {
		delete(r.sent, uid)
		r.mu.Unlock()
		return
	}
	if r.sent == nil {
		r.sent = map[types.UID]string{}
	}
	prev, ok := r.sent[uid]
	r.sent[uid] = problem
	r.mu.Unlock()
	if !ok || prev != problem {
		recorder.Event(obj, corev1.EventTypeWarning, reason, problem)
	}
}

// Forget drops what was reported of uid: the workload is gone.
func (r *ConfigReports) Forget(uid types.UID) {
	r.mu.Lock()
	delete(r.sent, uid)
	r.mu.Unlock()
}

// SetPinRecord gives obj (a copy about to be written) the pin record
// kroll.dev/config-pinned-at = record, or removes it for "" (configrollout.Effective).
func SetPinRecord(obj metav1.Object, record string) {
	a := obj.GetAnnotations()
	if record == "" {
		delete(a, configrollout.PinnedAtAnnotation)
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[configrollout.PinnedAtAnnotation] = record
	obj.SetAnnotations(a)
}
