package cluster

import (
	"context"
	"net/http"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// The embedded kube-controller-manager runs inside kroll's process, so two things a
// real cluster shows of it would differ: the API server names the field manager of its
// writes after the program that makes them (kroll, not kube-controller-manager), and it
// runs without leader election (one instance, and a lost lease would end the whole
// process). What tells a cluster's operators (and `kroll controller-manager`, which
// refuses to start beside upstream's workload controllers) that kube-controller-manager
// runs is both: its writes' manager, and its Lease. The cluster shows both as a real
// control plane does.

// kcmUserAgent is the program name kube-controller-manager's clients give the API server.
const kcmUserAgent = "kube-controller-manager"

// asKubeControllerManager makes rt's requests carry kube-controller-manager's program
// name: "kroll/v0.0.0 (linux/amd64) kubernetes/$Format/deployment-controller" becomes
// "kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/deployment-controller",
// so its writes' managedFields name kube-controller-manager, as on a real cluster.
func asKubeControllerManager(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		ua := req.Header.Get("User-Agent")
		if _, rest, ok := strings.Cut(ua, "/"); ok && !strings.HasPrefix(ua, kcmUserAgent+"/") {
			req = req.Clone(req.Context())
			req.Header.Set("User-Agent", kcmUserAgent+"/"+rest)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// holdKCMLease holds kube-controller-manager's Lease (kube-system/kube-controller-manager)
// with client-go's leader election, for as long as ctx lasts, as a real
// kube-controller-manager leader does (lease 15s, renewed every 2s, released on a clean
// stop). Losing it (a machine too busy to renew) only means taking it again.
func holdKCMLease(ctx context.Context, kubeconfig string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		klog.FromContext(ctx).Error(err, "kube-controller-manager's Lease is not held")
		return
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "leader-election"))
	if err != nil {
		klog.FromContext(ctx).Error(err, "kube-controller-manager's Lease is not held")
		return
	}
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: kcmUserAgent},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true, Name: kcmUserAgent,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
		})
	}
}
