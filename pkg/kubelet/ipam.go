package kubelet

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podNetworkBase is where node pod CIDRs are carved from: node i gets the i-th block.
var podNetworkBase = netip.MustParseAddr("10.244.0.0")

// nodeNetwork is one node's addresses: a loopback-range host IP (nothing is ever dialled
// there but the kubelet port, which refuses) and a pod CIDR.
type nodeNetwork struct {
	hostIP  string
	podCIDR netip.Prefix
}

// networkFor lays out node i for nodes that hold up to maxPods pods: blocks of the
// smallest power of two ≥ maxPods+4 addresses (network, gateway, broadcast, slack), at least a /24.
func networkFor(i, maxPods int) nodeNetwork {
	bits := 8
	for 1<<bits < maxPods+4 {
		bits++
	}
	base := podNetworkBase.As4()
	offset := uint32(i) << bits
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += offset
	addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return nodeNetwork{
		hostIP:  fmt.Sprintf("127.1.%d.%d", i/254, i%254+1),
		podCIDR: netip.PrefixFrom(addr, 32-bits),
	}
}

// ipam hands out pod IPs from each node's CIDR and remembers which pod holds which.
// It starts empty and learns the IPs of existing pods as they are synced.
type ipam struct {
	mu    sync.Mutex
	nodes map[string]*nodePool
	byPod map[types.UID]podLease
}

type nodePool struct {
	net  nodeNetwork
	used map[netip.Addr]types.UID
}

type podLease struct {
	node string
	ip   netip.Addr
}

func newIPAM() *ipam {
	return &ipam{nodes: map[string]*nodePool{}, byPod: map[types.UID]podLease{}}
}

func (a *ipam) addNode(name string, n nodeNetwork) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.nodes[name]; !ok {
		a.nodes[name] = &nodePool{net: n, used: map[netip.Addr]types.UID{}}
	}
}

// hostIP is the node's address; "" for a node that is not ours.
func (a *ipam) hostIP(node string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.nodes[node]; ok {
		return p.net.hostIP
	}
	return ""
}

// podIP returns the IP of pod uid on node: current (the address it already reports, if it
// is free and in the node's CIDR), or the lowest free one. ok is false when the node's CIDR is full.
func (a *ipam) podIP(node string, uid types.UID, current string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.byPod[uid]; ok {
		return l.ip.String(), true
	}
	p, ok := a.nodes[node]
	if !ok {
		return "", false
	}
	if ip, err := netip.ParseAddr(current); err == nil && p.net.podCIDR.Contains(ip) {
		if holder, taken := p.used[ip]; !taken || holder == uid {
			return a.lease(p, node, uid, ip), true
		}
	}
	// Skip the network address and the gateway (.0, .1); stop before broadcast.
	ip := p.net.podCIDR.Addr().Next().Next()
	for ; p.net.podCIDR.Contains(ip.Next()); ip = ip.Next() {
		if _, taken := p.used[ip]; !taken {
			return a.lease(p, node, uid, ip), true
		}
	}
	return "", false
}

// reserve leases ip to pod uid on node if it is in the node's CIDR and free: the
// address a pod already reports when the simulator starts (a resumed cluster). It is
// done for every existing pod before any pod is synced, oldest first, as a restarted
// kubelet finds its sandboxes with their addresses: learnt lazily instead, as each pod
// was synced, a pod created meanwhile took the lowest free address — one an existing
// pod not yet synced reported — and that pod had to change address. It reports whether
// the pod holds ip now.
func (a *ipam) reserve(node string, uid types.UID, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.nodes[node]
	if !ok || !p.net.podCIDR.Contains(addr) {
		return false
	}
	if l, leased := a.byPod[uid]; leased {
		return l.ip == addr
	}
	if _, taken := p.used[addr]; taken {
		return false
	}
	a.lease(p, node, uid, addr)
	return true
}

func (a *ipam) lease(p *nodePool, node string, uid types.UID, ip netip.Addr) string {
	p.used[ip] = uid
	a.byPod[uid] = podLease{node: node, ip: ip}
	return ip.String()
}

// release frees the IP of a pod that is gone.
func (a *ipam) release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.byPod[uid]; ok {
		delete(a.nodes[l.node].used, l.ip)
		delete(a.byPod, uid)
	}
}

// ipList is the patch of a list of addresses (podIPs, hostIPs: lists merged by ip)
// from was to want. The lists are merged by address: a pod that reported 10.244.0.2
// and is given 10.244.0.3 would report both, two addresses of one family, which the
// API server refuses — every status write of that pod, for good. So a list that
// differs from the pod's replaces it.
func ipList[T corev1.PodIP | corev1.HostIP](want, was []T) []any {
	if len(want) == 0 {
		return nil
	}
	out := make([]any, 0, len(want)+1)
	for _, ip := range want {
		out = append(out, ip)
	}
	if len(was) > 0 && !slices.Equal(want, was) {
		out = append(out, map[string]any{"$patch": "replace"})
	}
	return out
}
