package cluster

import (
	"context"
	"net/http"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
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

// serviceAccountPrefix begins the user names of kube-system's service accounts, as
// which kube-controller-manager's controllers act (--use-service-account-credentials).
const serviceAccountPrefix = "system:serviceaccount:kube-system:"

// kcmControllerAgent is what names a write's field manager for a request of user
// made with user agent ua: a controller of kube-controller-manager acting as its own
// service account (user system:serviceaccount:kube-system:<controller>), whose client
// kube-controller-manager's client builder made, says so at the end of its user agent
// ("kroll/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:
// deployment-controller"), and its writes are named kube-controller-manager's, as on a
// real cluster. The client builder copies no transport wrapper into those clients
// (rest.AnonymousClientConfig), so asKubeControllerManager cannot rename them: the API
// server does, from the authenticated user. ok is false when the request is any other.
func kcmControllerAgent(user, ua string) (renamed string, ok bool) {
	if !strings.HasPrefix(user, serviceAccountPrefix) || !strings.HasSuffix(ua, "/"+user) {
		return "", false
	}
	program, rest, found := strings.Cut(ua, "/")
	if !found || program == kcmUserAgent {
		return "", false
	}
	return kcmUserAgent + "/" + rest, true
}

// namingKCMControllers wraps the API server's handler, inside authentication, so that
// the writes of kube-controller-manager's controllers under their service accounts are
// named kube-controller-manager's (kcmControllerAgent).
func namingKCMControllers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, ok := genericapirequest.UserFrom(req.Context()); ok {
			if ua, ok := kcmControllerAgent(u.GetName(), req.UserAgent()); ok {
				req = req.Clone(req.Context())
				req.Header.Set("User-Agent", ua)
			}
		}
		h.ServeHTTP(w, req)
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
