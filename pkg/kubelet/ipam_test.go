package kubelet

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestNetworkFor(t *testing.T) {
	tests := []struct {
		node, maxPods     int
		wantHost, wantPod string
	}{
		{0, 110, "127.1.0.1", "10.244.0.0/24"},
		{1, 110, "127.1.0.2", "10.244.1.0/24"},
		{99, 110, "127.1.0.100", "10.244.99.0/24"},
		{254, 110, "127.1.1.1", "10.244.254.0/24"},
		{0, 500, "127.1.0.1", "10.244.0.0/23"},
		{3, 500, "127.1.0.4", "10.244.6.0/23"},
	}
	for _, tt := range tests {
		n := networkFor(tt.node, tt.maxPods)
		if n.hostIP != tt.wantHost || n.podCIDR.String() != tt.wantPod {
			t.Errorf("networkFor(%d, %d) = %s %s, want %s %s", tt.node, tt.maxPods, n.hostIP, n.podCIDR, tt.wantHost, tt.wantPod)
		}
	}
}

func TestIPAM(t *testing.T) {
	a := newIPAM()
	a.addNode("n0", networkFor(0, 110))
	ip1, ok := a.podIP("n0", types.UID("a"), "")
	if !ok || ip1 != "10.244.0.2" {
		t.Fatalf("first pod got %q %v, want 10.244.0.2 (skipping .0 and .1)", ip1, ok)
	}
	if again, _ := a.podIP("n0", types.UID("a"), ""); again != ip1 {
		t.Errorf("the same pod got a second IP %q", again)
	}
	if kept, _ := a.podIP("n0", types.UID("b"), "10.244.0.77"); kept != "10.244.0.77" {
		t.Errorf("a pod reporting a free IP of the node's CIDR (a resumed pod) got %q, want to keep it", kept)
	}
	if other, _ := a.podIP("n0", types.UID("c"), "10.244.0.2"); other == "10.244.0.2" {
		t.Error("a pod claiming an IP another pod holds got it")
	}
	// A resumed pod's address is reserved before any pod is synced: kept, not handed
	// out again; one taken, or outside the node's CIDR, is not reserved.
	if !a.reserve("n0", types.UID("r"), "10.244.0.9") {
		t.Error("a free address a resumed pod reports was not reserved")
	}
	if !a.reserve("n0", types.UID("r"), "10.244.0.9") {
		t.Error("reserving a pod's own address again failed")
	}
	if a.reserve("n0", types.UID("s"), "10.244.0.9") || a.reserve("n0", types.UID("s"), "10.245.0.9") || a.reserve("n0", types.UID("s"), "") {
		t.Error("a taken, foreign or empty address was reserved")
	}
	if got, _ := a.podIP("n0", types.UID("r"), ""); got != "10.244.0.9" {
		t.Errorf("the reserved pod got %q on its sync, want 10.244.0.9", got)
	}
	a.release(types.UID("a"))
	if reused, _ := a.podIP("n0", types.UID("d"), ""); reused != "10.244.0.2" {
		t.Errorf("a released IP was not reused: got %q", reused)
	}
	if _, ok := a.podIP("elsewhere", types.UID("e"), ""); ok {
		t.Error("a node that is not ours handed out an IP")
	}
	// A /24 holds .2 to .254: 253 pods; one more is refused.
	b := newIPAM()
	b.addNode("n0", networkFor(0, 110))
	for i := 0; i < 253; i++ {
		if _, ok := b.podIP("n0", types.UID(rune(i+1000)), ""); !ok {
			t.Fatalf("pod %d refused", i)
		}
	}
	if ip, ok := b.podIP("n0", types.UID("overflow"), ""); ok {
		t.Errorf("a full CIDR handed out %q", ip)
	}
}
