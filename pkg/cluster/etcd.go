package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdReadyTimeout bounds how long etcd may take to elect itself and serve.
const etcdReadyTimeout = time.Minute

// startEtcd runs a single-member etcd whose data lives in dir. It listens on free
// loopback ports, chosen afresh on every start: a one-member cluster never dials its own
// peer URL, so a resumed member is not bothered that its port moved. (Port 0 cannot be
// passed through: etcd would advertise it, and its clients would dial it.)
//
// etcd speaks TLS only, and serves only clients with a certificate its own CA signed,
// which only the API server holds (pki.ensureEtcd): any other local process is refused,
// so the API server's authentication, RBAC and admission cannot be bypassed. The peer
// listener, which a one-member cluster never uses, demands the same of its peers.
func startEtcd(ctx context.Context, dir, logFile string, p pki, unsafeNoFsync bool) (*embed.Etcd, string, error) {
	var (
		e      *embed.Etcd
		client string
		err    error
	)
	// A port found free may be taken before etcd binds it, by another listener or by
	// an outgoing connection's local port (both come from the ephemeral range); other
	// ports are then tried.
	for range etcdPortAttempts {
		if e, client, err = startEtcdOnFreePorts(dir, logFile, p, unsafeNoFsync); !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd: %w", err)
	case <-time.After(etcdReadyTimeout):
		e.Close()
		return nil, "", fmt.Errorf("etcd in %s was not ready within %s", filepath.Join(dir, "etcd"), etcdReadyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, "", ctx.Err()
	}
	return e, client, nil
}

// etcdPortAttempts bounds how many pairs of free ports startEtcd tries.
const etcdPortAttempts = 5

// startEtcdOnFreePorts starts etcd on two ports found free.
func startEtcdOnFreePorts(dir, logFile string, p pki, unsafeNoFsync bool) (*embed.Etcd, string, error) {
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
	client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	tls := transport.TLSInfo{CertFile: p.etcdServerCert(), KeyFile: p.etcdServerKey(), TrustedCAFile: p.etcdCACert(), ClientCertAuth: true}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = tls, tls
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
	return e, client.String(), nil
}

// FreePort finds a port of 127.0.0.1 that is free now, for a server that binds it a
// moment later. It picks at random below the kernel's ephemeral range, from which the
// local ports of outgoing connections come: many processes connecting at once (tests
// running clusters side by side) would otherwise take such a port in that moment. Where
// the range leaves no room below it, the kernel picks one.
func FreePort() (int, error) {
	if low := ephemeralPortsFrom(); low > minFreePort+1000 {
		for range 50 {
			port := minFreePort + rand.IntN(low-minFreePort)
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minFreePort is the lowest port FreePort picks: above the well-known and the most
// used registered ones.
const minFreePort = 20000

// ephemeralPortsFrom is the first port of the kernel's ephemeral range (Linux's
// default 32768), or 0 where it cannot be read.
func ephemeralPortsFrom() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	low, _ := strconv.Atoi(strings.Fields(string(data) + " 0")[0])
	return low
}
