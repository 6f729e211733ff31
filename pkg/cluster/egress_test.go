package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestEgressPassesOtherAddressesThrough: a CONNECT to an address no simulated pod has
// (a node's kubelet API) reaches that address as it is; a request that is not a
// CONNECT, or a CONNECT to an address nothing listens on, is refused with a status.
func TestEgressPassesOtherAddressesThrough(t *testing.T) {
	e, args, err := listenEgress()
	if err != nil {
		t.Fatal(err)
	}
	config, _ := strings.CutPrefix(args[0], "--egress-selector-config-file=")
	if data, err := os.ReadFile(config); err != nil || !strings.Contains(string(data), "udsName: "+e.listener.Addr().String()) {
		t.Fatalf("configuration %s = %q, %v; want the socket %s", config, data, err, e.listener.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(e.dir); !os.IsNotExist(err) {
			t.Errorf("the socket's directory is left: %v", err)
		}
	})

	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	cases := []struct {
		request string
		code    int
	}{
		{fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", echo.Addr()), 200},
		{fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", closedAddr), 502},
		{"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400},
	}
	for _, tc := range cases {
		conn, err := net.Dial("unix", e.listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(conn, tc.request)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != tc.code {
			t.Errorf("%q: %v, %v; want %d", tc.request, resp, err, tc.code)
		}
		if tc.code == 200 {
			fmt.Fprint(conn, "ping\n")
			if line, err := br.ReadString('\n'); line != "ping\n" {
				t.Errorf("through the tunnel: %q, %v; want the echo", line, err)
			}
		}
		conn.Close()
	}
}
