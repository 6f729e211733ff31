package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// nodeLeaseNamespace holds the kubelets' heartbeat Leases.
const nodeLeaseNamespace = "kube-node-lease"

// heartbeatParallelism bounds how many nodes renew at once, so 100 nodes renew in a few
// round trips instead of one after another.
const heartbeatParallelism = 8

// desiredNode is node i as this simulator registers it.
func (k *Kubelet) desiredNode(i int) *corev1.Node {
	name := NodeName(i)
	n := networkFor(i, k.cfg.Pods)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              k.cfg.CPU,
		corev1.ResourceMemory:           k.cfg.Memory,
		corev1.ResourcePods:             *resource.NewQuantity(int64(k.cfg.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:      name,
				corev1.LabelOSStable:      "linux",
				corev1.LabelArchStable:    "amd64",
				"beta.kubernetes.io/os":   "linux",
				"beta.kubernetes.io/arch": "amd64",
				LabelSimulated:            "true",
			},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{PodCIDR: n.podCIDR.String(), PodCIDRs: []string{n.podCIDR.String()}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.hostIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.apiPort}},
			// As a node with a current container runtime (containerd 2) declares.
			Features: &corev1.NodeFeatures{SupplementalGroupsPolicy: ptrBool(true)},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: fmt.Sprintf("kroll-%d", i), SystemUUID: fmt.Sprintf("kroll-%d", i), BootID: fmt.Sprintf("kroll-%d", i),
				KernelVersion: "kroll", OSImage: "kroll simulated node", ContainerRuntimeVersion: "kroll://simulated",
				KubeletVersion: k.cfg.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}
}

// nodeConditions are a healthy node's conditions, heartbeat now.
func nodeConditions(now metav1.Time, old []corev1.NodeCondition) []corev1.NodeCondition {
	want := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for i := range want {
		want[i].LastHeartbeatTime = now
		want[i].LastTransitionTime = now
		for _, o := range old {
			if o.Type == want[i].Type && o.Status == want[i].Status {
				want[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return want
}

// registerNodes creates the simulated nodes, or brings existing ones (a resumed cluster)
// up to date, and removes simulated nodes numbered beyond its own (left by an earlier
// run with more --nodes).
func (k *Kubelet) registerNodes(ctx context.Context) error {
	for i := k.cfg.FirstNode; i < k.cfg.FirstNode+k.cfg.Nodes; i++ {
		want := k.desiredNode(i)
		now := metav1.Now()
		want.Status.Conditions = nodeConditions(now, nil)
		node, err := k.nodeWriter(want.Name).CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			node, err = k.refreshNode(ctx, want)
		}
		if err != nil {
			return fmt.Errorf("register node %s: %w", want.Name, err)
		}
		k.nodeUIDs.Store(node.Name, node.UID)
		network := networkFor(i, k.cfg.Pods)
		if cidr, err := netip.ParsePrefix(node.Spec.PodCIDR); err == nil {
			network.podCIDR = cidr // a resumed node keeps the CIDR it was registered with
		}
		k.ipam.addNode(node.Name, network)
		if err := k.renewLease(ctx, node.Name); err != nil {
			return fmt.Errorf("node %s lease: %w", node.Name, err)
		}
	}
	extra, err := k.heartbeat.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelSimulated + "=true"})
	if err != nil {
		return fmt.Errorf("list simulated nodes: %w", err)
	}
	for _, n := range extra.Items {
		if i, ok := nodeIndexOf(n.Name); ok && i >= k.cfg.FirstNode+k.cfg.Nodes {
			if err := k.heartbeat.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove simulated node %s beyond --nodes: %w", n.Name, err)
			}
		}
	}
	return nil
}

// refreshNode merges want's labels, annotations and spec into an existing node and
// reports its status afresh (capacity may have changed between runs).
func (k *Kubelet) refreshNode(ctx context.Context, want *corev1.Node) (*corev1.Node, error) {
	meta, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": want.Labels, "annotations": want.Annotations},
		"spec":     map[string]any{"podCIDR": want.Spec.PodCIDR, "podCIDRs": want.Spec.PodCIDRs},
	})
	if err != nil {
		return nil, err
	}
	node, err := k.nodeWriter(want.Name).CoreV1().Nodes().Patch(ctx, want.Name, types.StrategicMergePatchType, meta, metav1.PatchOptions{})
	if err != nil {
		// podCIDR is immutable once set; a node laid out differently keeps its own.
		if !apierrors.IsInvalid(err) {
			return nil, err
		}
		if node, err = k.nodeWriter(want.Name).CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	return node, k.postNodeStatus(ctx, want.Name, &want.Status)
}

// postNodeStatus reports the node healthy with a fresh heartbeat; base, when set, also
// replaces capacity, addresses and node info.
func (k *Kubelet) postNodeStatus(ctx context.Context, name string, base *corev1.NodeStatus) error {
	node, err := k.nodeWriter(name).CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if base != nil {
		conds := node.Status.Conditions
		node.Status = *base.DeepCopy()
		node.Status.Conditions = conds
	}
	node.Status.Conditions = nodeConditions(metav1.Now(), node.Status.Conditions)
	_, err = k.nodeWriter(name).CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// renewLease renews (or creates) a node's heartbeat Lease, as the kubelet does every
// LeaseRenewInterval. The Lease is owned by its Node, so it goes when the node goes.
func (k *Kubelet) renewLease(ctx context.Context, node string) error {
	leases := k.nodeWriter(node).CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	k.leaseMu.Lock()
	lease := k.leases[node]
	k.leaseMu.Unlock()
	if lease == nil {
		got, err := leases.Get(ctx, node, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease = nil
		case err != nil:
			return err
		default:
			lease = got
		}
	}
	var err error
	if lease == nil {
		seconds := int32(k.cfg.LeaseDuration / time.Second)
		fresh := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: nodeLeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &seconds, RenewTime: &now},
		}
		if uid, ok := k.nodeUIDs.Load(node); ok {
			fresh.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: uid.(types.UID)}}
		}
		lease, err = leases.Create(ctx, fresh, metav1.CreateOptions{})
	} else {
		lease = lease.DeepCopy()
		lease.Spec.RenewTime = &now
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	k.leaseMu.Lock()
	if err != nil {
		delete(k.leases, node) // read it afresh next time (conflict, or deleted)
	} else {
		k.leases[node] = lease
	}
	k.leaseMu.Unlock()
	return err
}

// heartbeats keeps every node's Lease and Ready condition fresh until ctx ends. It runs
// on its own client and goroutines, apart from pod work: if heartbeats lagged past the
// node-monitor grace period, the node-lifecycle controller would mark every pod of the
// node NotReady.
func (k *Kubelet) heartbeats(ctx context.Context) {
	logger := klog.FromContext(ctx)
	leaseTick := time.NewTicker(k.cfg.LeaseRenewInterval)
	defer leaseTick.Stop()
	statusTick := time.NewTicker(k.cfg.NodeStatusInterval)
	defer statusTick.Stop()
	for {
		var beat func(context.Context, string) error
		select {
		case <-ctx.Done():
			return
		case <-leaseTick.C:
			beat = k.renewLease
		case <-statusTick.C:
			beat = func(ctx context.Context, node string) error { return k.postNodeStatus(ctx, node, nil) }
		}
		k.forEachNode(ctx, func(node string) {
			if err := beat(ctx, node); err != nil && ctx.Err() == nil {
				logger.Error(err, "Node heartbeat failed", "node", node)
			}
		})
	}
}

// forEachNode runs fn for every simulated node, heartbeatParallelism at a time.
func (k *Kubelet) forEachNode(ctx context.Context, fn func(node string)) {
	sem := make(chan struct{}, heartbeatParallelism)
	var wg sync.WaitGroup
	for i := k.cfg.FirstNode; i < k.cfg.FirstNode+k.cfg.Nodes; i++ {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(node string) {
			defer func() { <-sem; wg.Done() }()
			fn(node)
		}(NodeName(i))
	}
	wg.Wait()
}
