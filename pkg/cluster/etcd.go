package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// etcdReadyTimeout bounds how long etcd may take to elect itself and serve.
const etcdReadyTimeout = time.Minute

// startEtcd runs a single-member etcd whose data lives in dir. It listens on free
// loopback ports, chosen afresh on every start: a one-member cluster never dials its own
// peer URL, so a resumed member is not bothered that its port moved. (Port 0 cannot be
// passed through: etcd would advertise it, and its clients would dial it.)
func startEtcd(ctx context.Context, dir, logFile string, unsafeNoFsync bool) (*embed.Etcd, string, error) {
	clientPort, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kroll"
	cfg.Dir = filepath.Join(dir, "etcd")
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger, cfg.LogLevel, cfg.LogOutputs = "zap", "error", []string{logFile}
	cfg.UnsafeNoFsync = unsafeNoFsync
	// Keep the store small across long runs: compact hourly, as kube-apiserver also asks.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd: %w", err)
	case <-time.After(etcdReadyTimeout):
		e.Close()
		return nil, "", fmt.Errorf("etcd in %s was not ready within %s", cfg.Dir, etcdReadyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, "", ctx.Err()
	}
	return e, client.String(), nil
}

// FreePort asks the kernel for a free port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
