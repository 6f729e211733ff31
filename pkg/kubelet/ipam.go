package kubelet

import (
	"fmt"
	"net/netip"
	"sync"

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
