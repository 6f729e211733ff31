package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// Identities the embedded components present to the API server. Each is a client
// certificate signed by the cluster CA; RBAC's bootstrap policy knows the component ones.
var (
	// The admin kubeconfig's: cluster-admin, as kubeadm's admin.conf.
	identityAdmin = identity{file: "admin", cn: "kroll-admin", orgs: []string{"system:masters"}}
	// kube-controller-manager's own identity, bound to upstream's bootstrap role of
	// each of its controllers (identities.go), not in system:masters.
	identityControllerManager = identity{file: "controller-manager", cn: "system:kube-controller-manager"}
	identityScheduler         = identity{file: "scheduler", cn: "system:kube-scheduler"}
	// The simulated kubelets' shared identity: reads, and acts as each node
	// (identities.go, simulatedKubeletRole).
	identityKubelet = identity{file: "kubelet", cn: "kroll:kubelet"}
	// kroll's workload controllers: deploy/rbac.yaml's ClusterRole only.
	identityControllers = identity{file: "kroll-controllers", cn: "kroll:controller-manager"}
	// kube-apiserver's client certificate to the nodes' kubelet API (logs, exec,
	// port-forward); the nodes authorize it by SubjectAccessReview on nodes/proxy,
	// which upstream's system:kubelet-api-admin grants it.
	identityAPIServerKubeletClient = identity{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client"}
	// The simulated storage provisioner: no group, only the ClusterRole storage.go binds.
	identityStorage = identity{file: "storage-provisioner", cn: "kroll:storage-provisioner"}
	// The embedded Prometheus (--prometheus): discovers pods and scrapes the API server's
	// /metrics, under the ClusterRole prometheus.go binds, and nothing more.
	identityPrometheus = identity{file: "prometheus", cn: "kroll:prometheus"}
)

type identity struct {
	file string
	cn   string
	orgs []string
}

const certValidity = 10 * 365 * 24 * time.Hour

// pki is the cluster's key material, created in dir on the first start and reused after.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// caCert, caKey: the cluster CA; it signs the serving and client certificates.
func (p pki) caCert() string { return p.path("ca.crt") }
func (p pki) caKey() string  { return p.path("ca.key") }

// serving certificate of kube-apiserver.
func (p pki) servingCert() string { return p.path("apiserver.crt") }
func (p pki) servingKey() string  { return p.path("apiserver.key") }

// service-account token signing key pair.
func (p pki) saKey() string { return p.path("sa.key") }
func (p pki) saPub() string { return p.path("sa.pub") }

// etcd's own CA, apart from the cluster CA: etcd trusts every client certificate its
// CA signed, so the cluster CA (which signs every component's and the admin's client
// certificate) must not be the one. Only the API server holds a certificate it signed.
func (p pki) etcdCACert() string { return p.path("etcd-ca.crt") }
func (p pki) etcdCAKey() string  { return p.path("etcd-ca.key") }

// etcd's serving certificate (for 127.0.0.1; also its peer certificate) and the API
// server's client certificate to etcd.
func (p pki) etcdServerCert() string          { return p.path("etcd-server.crt") }
func (p pki) etcdServerKey() string           { return p.path("etcd-server.key") }
func (p pki) apiServerEtcdClientCert() string { return p.path("apiserver-etcd-client.crt") }
func (p pki) apiServerEtcdClientKey() string  { return p.path("apiserver-etcd-client.key") }

func (p pki) clientCert(id identity) string { return p.path(id.file + ".crt") }
func (p pki) clientKey(id identity) string  { return p.path(id.file + ".key") }

// ensure creates whatever key material is missing. Files that exist are kept, so a
// resumed cluster keeps its CA and every issued token stays valid.
func (p pki) ensure(serviceIP net.IP) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := p.loadOrCreateCA(p.caCert(), p.caKey(), "kroll-ca")
	if err != nil {
		return err
	}
	if err := p.ensureEtcd(); err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), serviceIP},
	}
	if err := p.ensureSigned(p.servingCert(), p.servingKey(), serving, ca, caKey); err != nil {
		return err
	}
	for _, id := range []identity{identityAdmin, identityControllerManager, identityScheduler, identityKubelet, identityControllers, identityStorage, identityAPIServerKubeletClient, identityPrometheus} {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.cn, Organization: id.orgs},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := p.ensureSigned(p.clientCert(id), p.clientKey(id), tmpl, ca, caKey); err != nil {
			return err
		}
	}
	if exists(p.saKey()) && exists(p.saPub()) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(p.saKey(), key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return os.WriteFile(p.saPub(), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// ensureEtcd creates etcd's CA, serving certificate and the API server's client
// certificate where missing (a data dir from before etcd spoke TLS gains them).
func (p pki) ensureEtcd() error {
	ca, caKey, err := p.loadOrCreateCA(p.etcdCACert(), p.etcdCAKey(), "kroll-etcd-ca")
	if err != nil {
		return err
	}
	server := &x509.Certificate{
		Subject: pkix.Name{CommonName: "kroll-etcd"},
		// Client auth too: etcd presents it to its (unused) peer listener.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	if err := p.ensureSigned(p.etcdServerCert(), p.etcdServerKey(), server, ca, caKey); err != nil {
		return err
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-etcd-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return p.ensureSigned(p.apiServerEtcdClientCert(), p.apiServerEtcdClientKey(), client, ca, caKey)
}

func (p pki) loadOrCreateCA(certFile, keyFile, cn string) (*x509.Certificate, crypto.Signer, error) {
	if exists(certFile) && exists(keyFile) {
		return loadPair(certFile, keyFile)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, nil, err
	}
	if err := writeCert(certFile, der); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// ensureSigned creates certFile/keyFile from tmpl, signed by ca, unless both exist with
// tmpl's subject, signed by ca: a data dir from an older kroll, whose components were
// in system:masters, has those certificates issued anew.
func (p pki) ensureSigned(certFile, keyFile string, tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer) error {
	if exists(keyFile) {
		if cert, _, err := loadPair(certFile, keyFile); err == nil && sameSubject(cert.Subject, tmpl.Subject) && cert.CheckSignatureFrom(ca) == nil {
			return nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyFile, key); err != nil {
		return err
	}
	return writeCert(certFile, der)
}

// sameSubject: a and b name the same common name and organizations.
func sameSubject(a, b pkix.Name) bool {
	return a.CommonName == b.CommonName && slices.Equal(a.Organization, b.Organization)
}

func loadPair(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New(keyFile + " is not a signing key")
	}
	return cert, signer, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der}), 0o600)
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n.Add(n, big.NewInt(1))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
