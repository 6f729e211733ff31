package kubelet

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/klog/v2"
)

// APIConfig turns on the kubelet API of every simulated node (api.go): HTTPS on the
// node's InternalIP at Port, with a serving certificate CA signs for those addresses;
// clients authenticate with a certificate CA signed (the API server's kubelet client
// certificate) and are authorized by SubjectAccessReview on nodes/proxy, nodes/log, …
// as a kubelet authorizes them.
type APIConfig struct {
	CA    *x509.Certificate
	CAKey crypto.Signer
	// Port is the port every node serves on; zero picks a free one.
	Port int
}

// defaultKubeletPort is what a node advertises when it serves no API.
const defaultKubeletPort = 10250

// startAPI listens on every node's address and serves the kubelet API until ctx ends;
// it sets k.apiPort, which the nodes then advertise.
func (k *Kubelet) startAPI(ctx context.Context) error {
	cfg := k.cfg.API
	var ips []net.IP
	for i := k.cfg.FirstNode; i < k.cfg.FirstNode+k.cfg.Nodes; i++ {
		ips = append(ips, net.ParseIP(networkFor(i, k.cfg.Pods).hostIP))
	}
	cert, err := servingCert(cfg.CA, cfg.CAKey, ips)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(cfg.CA)
	authn := x509request.New(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, x509request.CommonNameUserConversion)
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: k.client.AuthorizationV1(),
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
	}.New()
	if err != nil {
		return err
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	port := cfg.Port
	for i := k.cfg.FirstNode; i < k.cfg.FirstNode+k.cfg.Nodes; i++ {
		addr := net.JoinHostPort(networkFor(i, k.cfg.Pods).hostIP, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("kubelet API of %s: %w", NodeName(i), err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{Handler: k.apiHandler(NodeName(i), authn, authz), ReadHeaderTimeout: 30 * time.Second}
		go func() {
			if err := srv.Serve(tls.NewListener(l, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "kubelet API stopped", "address", addr)
			}
		}()
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
	}
	k.apiPort = int32(port)
	return nil
}

// apiHandler authenticates and authorizes every request to node's kubelet API, then
// serves it.
func (k *Kubelet) apiHandler(node string, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := nodeAttributes(resp.User, node, r.Method, r.URL.Path)
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if err != nil || decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", resp.User.GetName(), attrs.Verb, attrs.Subresource)
			if reason != "" {
				msg += ": " + reason
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		k.serveAPI(w, r, node)
	})
}

// serveAPI routes an allowed request.
func (k *Kubelet) serveAPI(w http.ResponseWriter, r *http.Request, node string) {
	route := routeOf(r.URL.Path)
	if route.kind == "healthz" {
		_, _ = w.Write([]byte("ok"))
		return
	}
	if route.kind == "" {
		http.NotFound(w, r)
		return
	}
	pod, err := k.podLister.Pods(route.namespace).Get(route.pod)
	if err != nil || pod.Spec.NodeName != node || (route.uid != "" && string(pod.UID) != route.uid) {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist on node %s", route.namespace, route.pod, node), http.StatusNotFound)
		return
	}
	switch route.kind {
	case "containerLogs":
		k.serveLogs(w, r, pod, route.container)
	case "exec", "attach":
		k.serveRemoteCommand(w, r, pod, route)
	case "portForward":
		k.servePortForward(w, r, pod)
	}
}

// servingCert is a serving certificate for ips signed by ca.
func servingCert(ca *x509.Certificate, caKey crypto.Signer, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: "kroll-kubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}, nil
}
