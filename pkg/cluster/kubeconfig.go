package cluster

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in kroll's kubeconfigs.
const contextName = "kroll"

// kubeconfigFor builds a self-contained kubeconfig (certificates embedded) for id.
func (p pki) kubeconfigFor(server string, id identity) (*clientcmdapi.Config, error) {
	ca, err := os.ReadFile(p.caCert())
	if err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(p.clientCert(id))
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(p.clientKey(id))
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[id.cn] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: id.cn}
	cfg.CurrentContext = contextName
	return cfg, nil
}

// writeKubeconfig writes a kubeconfig for id to path, mode 0600.
func (p pki) writeKubeconfig(path, server string, id identity) error {
	cfg, err := p.kubeconfigFor(server, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// restConfigFor is id's client configuration, without client-side rate limits.
func (p pki) restConfigFor(server string, id identity) (*rest.Config, error) {
	cfg, err := p.kubeconfigFor(server, id)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	return rc, nil
}
