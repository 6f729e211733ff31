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

// startEtcd runs a single-member etcd whose data lives in dir. Its clients reach it on
// a free loopback port, chosen afresh on every start. (Port 0 cannot be passed through:
// etcd would advertise it, and its clients would dial it.)
//
// etcd speaks TLS only, and serves only clients with a certificate its own CA signed,
// which only the API server holds (pki.ensureEtcd): any other local process is refused,
// so the API server's authentication, RBAC and admission cannot be bypassed. Its peer
// listener, which a one-member cluster never uses, is no TCP port but a Unix socket in
// a directory only this user may enter (peerSocketDir): etcd serves a socket's peers
// without TLS (it takes "unixs" URLs as "unix" ones), so the directory is what keeps
// other local users out; this user may read etcd's files anyway.
func startEtcd(ctx context.Context, dir, logFile string, p pki, unsafeNoFsync bool) (*embed.Etcd, string, error) {
	var (
		e      *embed.Etcd
		client string
		err    error
	)
	peerDir, removePeerDir, err := peerSocketDir(dir)
	if err != nil {
		return nil, "", err
	}
	// A port found free may be taken before etcd binds it, by another listener or by
	// an outgoing connection's local port (both come from the ephemeral range); other
	// ports are then tried.
	for range etcdPortAttempts {
		if e, client, err = startEtcdOnFreePorts(dir, peerDir, logFile, p, unsafeNoFsync); !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		removePeerDir()
		return nil, "", err
	}
	go func() { <-e.Server.StopNotify(); removePeerDir() }()
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

// startEtcdOnFreePorts starts etcd on a client port found free, its peer listener in
// peerDir.
func startEtcdOnFreePorts(dir, peerDir, logFile string, p pki, unsafeNoFsync bool) (*embed.Etcd, string, error) {
	clientPort, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kroll"
	cfg.Dir = filepath.Join(dir, "etcd")
	client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	tls := transport.TLSInfo{CertFile: p.etcdServerCert(), KeyFile: p.etcdServerKey(), TrustedCAFile: p.etcdCACert(), ClientCertAuth: true}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = tls, tls
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	// etcd listens on a Unix socket for a "unix" URL whose host is the socket's path.
	// The member's advertised peer URL must be a host and port, and is only ever
	// dialled by other members, of which there are none: it names the conventional
	// peer port and nothing listens there.
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: filepath.Join(peerDir, peerSocket)}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "https", Host: advertisedPeerHost}}
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

// peerSocket names etcd's peer socket in its directory; advertisedPeerHost is the
// member's advertised (never dialled) peer address.
const (
	peerSocket         = "peer.sock"
	advertisedPeerHost = "127.0.0.1:2380"
)

// maxSocketPath is the longest path a Unix socket may have on Linux (sun_path's 108
// bytes, less the terminating NUL).
const maxSocketPath = 107

// peerSocketDir makes the directory of etcd's peer socket, dir/etcd-peer, which only
// this user may enter (0700, set again on every start: an old data directory may be
// open to others), so no other local user may connect to the socket. A data directory
// whose path leaves the socket longer than Linux allows has it in a private directory
// (0700) of the system's temporary directory instead, which remove removes.
func peerSocketDir(dir string) (peerDir string, remove func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	peerDir = filepath.Join(abs, "etcd-peer")
	if len(filepath.Join(peerDir, peerSocket)) > maxSocketPath {
		peerDir, err = os.MkdirTemp("", "kroll-etcd-peer-")
		if err != nil {
			return "", nil, fmt.Errorf("etcd's peer socket: %w", err)
		}
		return peerDir, func() { os.RemoveAll(peerDir) }, nil
	}
	if err := os.Mkdir(peerDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, fmt.Errorf("etcd's peer socket: %w", err)
	}
	if err := os.Chmod(peerDir, 0o700); err != nil {
		return "", nil, fmt.Errorf("etcd's peer socket: %w", err)
	}
	return peerDir, func() {}, nil
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
