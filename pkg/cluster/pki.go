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
	"time"

	"k8s.io/client-go/util/keyutil"
)

// Identities the embedded components present to the API server. Each is a client
// certificate signed by the cluster CA; RBAC's bootstrap policy knows the component ones.
var (
	identityAdmin = identity{file: "admin", cn: "kroll-admin", orgs: []string{"system:masters"}}
	// kube-controller-manager runs its controllers under its own identity instead of one
	// service account each (--use-service-account-credentials=false): building forty
	// token-based clients one after another costs seconds on every start. That identity
	// needs every controller's permissions, hence system:masters.
	identityControllerManager = identity{file: "controller-manager", cn: "system:kube-controller-manager", orgs: []string{"system:masters"}}
	identityScheduler         = identity{file: "scheduler", cn: "system:kube-scheduler"}
	// The simulated kubelets act for many nodes at once, which the Node authorizer's
	// one-node-per-identity model cannot express; they run as cluster admins.
	identityKubelet = identity{file: "kubelet", cn: "kroll:kubelet", orgs: []string{"system:masters"}}
	// kroll's workload controllers.
	identityControllers = identity{file: "kroll-controllers", cn: "kroll:controller-manager", orgs: []string{"system:masters"}}
	// kube-apiserver's client certificate to the nodes' kubelet API (logs, exec,
	// port-forward); the nodes authorize it by SubjectAccessReview on nodes/proxy.
	identityAPIServerKubeletClient = identity{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}}
	// The simulated storage provisioner: no group, only the ClusterRole storage.go binds.
	identityStorage = identity{file: "storage-provisioner", cn: "kroll:storage-provisioner"}
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

func (p pki) clientCert(id identity) string { return p.path(id.file + ".crt") }
func (p pki) clientKey(id identity) string  { return p.path(id.file + ".key") }

// ensure creates whatever key material is missing. Files that exist are kept, so a
// resumed cluster keeps its CA and every issued token stays valid.
func (p pki) ensure(serviceIP net.IP) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := p.loadOrCreateCA()
	if err != nil {
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
	for _, id := range []identity{identityAdmin, identityControllerManager, identityScheduler, identityKubelet, identityControllers, identityStorage, identityAPIServerKubeletClient} {
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

func (p pki) loadOrCreateCA() (*x509.Certificate, crypto.Signer, error) {
	if exists(p.caCert()) && exists(p.caKey()) {
		return loadPair(p.caCert(), p.caKey())
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kroll-ca"},
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
	if err := writeKey(p.caKey(), key); err != nil {
		return nil, nil, err
	}
	if err := writeCert(p.caCert(), der); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// ensureSigned creates certFile/keyFile from tmpl, signed by ca, unless both exist.
func (p pki) ensureSigned(certFile, keyFile string, tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer) error {
	if exists(certFile) && exists(keyFile) {
		return nil
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
