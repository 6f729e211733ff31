package container

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestMainProcess(t *testing.T) {
	cases := []struct {
		name     string
		spec     Spec
		at       time.Duration // advance to t0+at
		ended    bool
		code     int
		endedAt  time.Duration
		log      []string // lines expected in the log, in order (a subset)
		wakeAt   time.Duration
		sleeping bool
	}{
		{name: "sh -c 'exit 1' ends at once with 1", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "exit 1"}}, ended: true, code: 1},
		{name: "echo done: Completed with the line in the log", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "echo done"}}, ended: true, log: []string{"done"}},
		{name: "busybox without a command: sh without stdin ends with 0", spec: Spec{Image: "busybox"}, ended: true},
		{name: "sleep 5; exit 3 ends 5s after start", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "sleep 5; exit 3"}}, at: 6 * time.Second, ended: true, code: 3, endedAt: 5 * time.Second},
		{name: "still sleeping at 4s, wakes at 5s", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "sleep 5; exit 3"}}, at: 4 * time.Second, sleeping: true, wakeAt: 5 * time.Second},
		{name: "false && echo no || echo yes: and-or lists left to right", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "false && echo no || echo yes; exit $?"}}, ended: true, log: []string{"yes"}},
		{name: "env expansion with a default", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "echo $GREETING ${WHO:-world}"}, Env: map[string]string{"GREETING": "hello"}}, ended: true, log: []string{"hello world"}},
		{name: "while loop is not understood: runs for ever and says so", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "while true; do sleep 1; done"}}, at: time.Hour, log: []string{"kroll: the simulated node does not interpret"}},
		{name: "sleep infinity runs for ever", spec: Spec{Image: "busybox", Command: []string{"sleep", "infinity"}}, at: time.Hour},
		{name: "sleep 3600 sleeps", spec: Spec{Image: "busybox", Args: []string{"sleep", "3600"}}, at: time.Minute, sleeping: true, wakeAt: time.Hour},
		{name: "nginx default serves and logs its start", spec: Spec{Image: "nginx:1.25"}, at: time.Hour, log: []string{"/docker-entrypoint.sh: Configuration complete; ready for start up"}},
		{name: "an unknown program in a known image runs for ever and says so", spec: Spec{Image: "nginx", Command: []string{"/app/server"}}, log: []string{`kroll: the simulated node does not interpret "/app/server"`}},
		{name: "test -f after touch", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "touch /tmp/x && [ -f /tmp/x ] && exit 7"}}, ended: true, code: 7},
		{name: "cat of a missing file fails and says so", spec: Spec{Image: "alpine", Command: []string{"sh", "-c", "cat /nope"}}, ended: true, code: 1, log: []string{"cat: can't open '/nope': No such file or directory"}},
		{name: "exit 256 wraps to 0", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "exit 256"}}, ended: true, code: 0},
		{name: "an image without a model runs its own entrypoint as a server", spec: Spec{Image: "example.com/team/app:v1"}, at: time.Hour},
		{name: "as an init container, an image without a model ends at once with 0", spec: Spec{Image: "example.com/team/app:v1", Init: true}, ended: true},
		{name: "as an init container, a command an image without a model ships ends with 0", spec: Spec{Image: "example.com/team/migrate:v1", Command: []string{"/migrate", "up"}, Init: true}, ended: true},
		{name: "as an init container, a command it ships after a sleep ends then", spec: Spec{Image: "example.com/team/migrate:v1", Command: []string{"sh", "-c", "sleep 2; /migrate up; exit $?"}, Init: true}, at: 3 * time.Second, ended: true, endedAt: 2 * time.Second},
		{name: "as an init container, a known image's server still runs for ever", spec: Spec{Image: "nginx:1.25", Init: true}, at: time.Hour, log: []string{"ready for start up"}},
		{name: "as an init container, busybox's exit 2 ends with 2", spec: Spec{Image: "busybox", Command: []string{"sh", "-c", "echo failing; exit 2"}, Init: true}, ended: true, code: 2, log: []string{"failing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(tc.spec, t0)
			c.AdvanceTo(t0.Add(tc.at))
			code, at, ended := c.Exited()
			if ended != tc.ended || (ended && (code != tc.code || !at.Equal(t0.Add(tc.endedAt)))) {
				t.Errorf("exited = (%d, %v, %v), want (%d, %v, %v); log %v", code, at.Sub(t0), ended, tc.code, tc.endedAt, tc.ended, c.Log())
			}
			wake, sleeping := c.Next()
			if sleeping != tc.sleeping || (sleeping && !wake.Equal(t0.Add(tc.wakeAt))) {
				t.Errorf("next = (%v, %v), want (%v, %v)", wake.Sub(t0), sleeping, tc.wakeAt, tc.sleeping)
			}
			var text []string
			for _, l := range c.Log() {
				text = append(text, l.Text)
			}
			joined := strings.Join(text, "\n")
			for _, want := range tc.log {
				if !strings.Contains(joined, want) {
					t.Errorf("log %q lacks %q", joined, want)
				}
			}
		})
	}
}

// The liveness walkthrough of the Kubernetes documentation: the file exists for 30s,
// then is removed.
func TestFilesChangeOverTheProcessLife(t *testing.T) {
	c := Start(Spec{Image: "busybox", Args: []string{"/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"}}, t0)
	for _, tc := range []struct {
		at   time.Duration
		code int
	}{{0, 0}, {29 * time.Second, 0}, {30 * time.Second, 1}, {10 * time.Minute, 1}, {11 * time.Minute, 1}} {
		if r := c.Exec(t0.Add(tc.at), []string{"cat", "/tmp/healthy"}, nil); r.ExitCode != tc.code {
			t.Errorf("cat /tmp/healthy at %v: exit %d, want %d (%q)", tc.at, r.ExitCode, tc.code, r.Output)
		}
	}
	if _, at, ended := c.Exited(); !ended || !at.Equal(t0.Add(630*time.Second)) {
		t.Errorf("exited at %v, ended %v; want 630s", at.Sub(t0), ended)
	}
}

func TestHTTPAndExec(t *testing.T) {
	c := Start(Spec{Image: "nginx:1.14.2", Hostname: "web-0"}, t0)
	get := func(port int32, p string) (int, error) {
		code, _, err := c.HTTPGet(t0.Add(time.Second), "http", port, p, nil)
		return code, err
	}
	if code, err := get(80, "/"); code != 200 || err != nil {
		t.Fatalf("GET / = %d, %v; want 200", code, err)
	}
	if code, _ := get(80, "/healthz"); code != 404 {
		t.Errorf("GET /healthz = %d, want 404", code)
	}
	if _, err := get(8080, "/"); !errors.Is(err, ErrRefused) {
		t.Errorf("GET :8080 err = %v, want refused", err)
	}
	r := c.Exec(t0.Add(2*time.Second), []string{"sh", "-c", "mv /usr/share/nginx/html/index.html /tmp/ && echo moved"}, nil)
	if r.ExitCode != 0 || r.Output != "moved\n" {
		t.Fatalf("exec mv = %+v", r)
	}
	if code, _ := get(80, "/"); code != 404 {
		t.Errorf("GET / after the index moved away = %d, want 404", code)
	}
	c.Exec(t0.Add(3*time.Second), []string{"mv", "/tmp/index.html", "/usr/share/nginx/html/"}, nil)
	if code, _ := get(80, "/"); code != 200 {
		t.Errorf("GET / after the index moved back = %d, want 200", code)
	}
	if r := c.Exec(t0, []string{"sh", "-c", "echo hi; exit 3"}, nil); r.ExitCode != 3 || r.Output != "hi\n" {
		t.Errorf("exec echo hi; exit 3 = %+v", r)
	}
	if r := c.Exec(t0, []string{"sh", "-c", "sleep 2; true"}, nil); r.Took != 2*time.Second {
		t.Errorf("exec sleep 2 took %v", r.Took)
	}
	if r := c.Exec(t0, []string{"nc", "-z", "localhost", "80"}, nil); r.Took != Forever {
		t.Errorf("exec of an unknown program took %v, want Forever", r.Took)
	}
	for _, tc := range []struct {
		argv []string
		code int
		out  string
	}{
		{[]string{"curl", "-sf", "http://localhost/"}, 0, "Welcome to nginx!"},
		{[]string{"curl", "-f", "http://127.0.0.1:80/healthz"}, 22, "curl: (22) The requested URL returned error: 404"},
		{[]string{"curl", "http://localhost/healthz"}, 0, "404 Not Found"},
		{[]string{"curl", "-s", "http://localhost:8080/"}, 7, "Failed to connect to localhost port 8080"},
		{[]string{"curl", "http://example.com/"}, 6, "Could not resolve host: example.com"},
		{[]string{"wget", "-q", "-O-", "http://localhost/"}, 0, "Welcome to nginx!"},
		{[]string{"wget", "--spider", "http://localhost/healthz"}, 1, "wget: server returned error: HTTP/1.1 404 Not Found"},
	} {
		if r := c.Exec(t0.Add(4*time.Second), tc.argv, nil); r.ExitCode != tc.code || !strings.Contains(r.Output, tc.out) {
			t.Errorf("exec %v = exit %d %q; want %d with %q", tc.argv, r.ExitCode, r.Output, tc.code, tc.out)
		}
	}
	shop := Start(Spec{Image: "example.com/shop:v2"}, t0)
	if r := shop.Exec(t0, []string{"/app/healthcheck", "--ready"}, nil); r.ExitCode != 0 || r.Took != 0 {
		t.Errorf("exec of its own tool in an image without a model = %+v, want success", r)
	}
	if r := shop.Exec(t0, []string{"cat", "/nope"}, nil); r.ExitCode != 1 {
		t.Errorf("cat of a missing file in an image without a model = %+v, want exit 1", r)
	}
	if again := Start(Spec{Image: "nginx"}, t0); !again.FS().Exists("/usr/share/nginx/html/index.html") {
		t.Error("a new instance did not start from the image's files")
	}
}

func TestImages(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		port int32
		path string
		code int   // 0: no HTTP expected
		dial error // for a TCP dial of port
	}{
		{name: "httpd serves htdocs", spec: Spec{Image: "httpd:2.4"}, port: 80, path: "/", code: 200},
		{name: "e2e httpd", spec: Spec{Image: "registry.k8s.io/e2e-test-images/httpd:2.4.38-4"}, port: 80, path: "/index.html", code: 200},
		{name: "agnhost netexec /healthz on its http-port", spec: Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec", "--http-port=8081"}}, port: 8081, path: "/healthz", code: 200},
		{name: "agnhost netexec unknown path", spec: Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec"}}, port: 8080, path: "/nope", code: 404},
		{name: "agnhost serve-hostname on 9376", spec: Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Command: []string{"/agnhost", "serve-hostname"}}, port: 9376, path: "/", code: 200},
		{name: "agnhost pause listens on nothing", spec: Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53"}, port: 8080, dial: ErrRefused},
		{name: "redis on 6379", spec: Spec{Image: "redis:7"}, port: 6379},
		{name: "postgres on 5432", spec: Spec{Image: "postgres:16"}, port: 5432},
		{name: "mysql on 3306", spec: Spec{Image: "mysql:8"}, port: 3306},
		{name: "pause listens on nothing", spec: Spec{Image: "registry.k8s.io/pause:3.10"}, port: 80, dial: ErrRefused},
		{name: "an unknown image answers on any port", spec: Spec{Image: "example.com/shop:v2"}, port: 8443, path: "/ready", code: 200},
		{name: "busybox that sleeps listens on nothing", spec: Spec{Image: "busybox", Command: []string{"sleep", "3600"}}, port: 80, dial: ErrRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(tc.spec, t0)
			now := t0.Add(time.Second)
			if err := c.Dial(now, tc.port); !errors.Is(err, tc.dial) {
				t.Fatalf("dial %d = %v, want %v", tc.port, err, tc.dial)
			}
			if tc.code != 0 {
				if code, _, err := c.HTTPGet(now, "http", tc.port, tc.path, nil); code != tc.code || err != nil {
					t.Errorf("GET %s = %d, %v; want %d", tc.path, code, err, tc.code)
				}
			}
		})
	}
	if _, _, err := Start(Spec{Image: "redis"}, t0).HTTPGet(t0, "http", 6379, "/", nil); !errors.Is(err, ErrNotHTTP) {
		t.Errorf("HTTP GET of redis = %v, want a malformed response", err)
	}
	live := Start(Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"liveness"}}, t0)
	if code, _, _ := live.HTTPGet(t0.Add(9*time.Second), "http", 8080, "/healthz", nil); code != 200 {
		t.Errorf("agnhost liveness at 9s = %d, want 200", code)
	}
	if code, _, _ := live.HTTPGet(t0.Add(10*time.Second), "http", 8080, "/healthz", nil); code != 500 {
		t.Errorf("agnhost liveness at 10s = %d, want 500", code)
	}
}

func TestParseScript(t *testing.T) {
	cases := []struct {
		src   string
		steps int
		bad   bool
	}{
		{"echo a; echo b", 2, false},
		{"echo 'a; b' \"c $X\"", 1, false},
		{"a && b || c", 3, false},
		{"echo a > /tmp/f 2>&1", 1, false},
		{"echo a\n\necho b # comment", 2, false},
		{"cat /x | grep y", 0, true},
		{"echo $(date)", 0, true},
		{"if true; then echo; fi", 0, true},
		{"&& echo", 0, true},
		{"echo 'unterminated", 0, true},
		{"echo 'if'", 1, false},
	}
	for _, tc := range cases {
		steps, err := parseScript(tc.src)
		if (err != nil) != tc.bad || len(steps) != tc.steps {
			t.Errorf("parseScript(%q) = %d steps, %v; want %d, bad %v", tc.src, len(steps), err, tc.steps, tc.bad)
		}
	}
}

func TestShellSubset(t *testing.T) {
	cases := []struct {
		script string
		out    string
		code   int
	}{
		{"echo a > /tmp/f; echo b >> /tmp/f; cat /tmp/f", "a\nb\n", 0},
		{"mkdir -p /data/x/y && touch /data/x/y/z && ls /data/x", "y\n", 0},
		{"mkdir /tmp", "mkdir: can't create directory '/tmp': File exists\n", 1},
		{"cp /etc/hostname /tmp/h && cat /tmp/h", "pod-0\n", 0},
		{"rm /nope", "rm: can't remove '/nope': No such file or directory\n", 1},
		{"rm -f /nope", "", 0},
		{"mkdir /d && touch /d/f && rm /d", "rm: '/d' is a directory\n", 1},
		{"mkdir /d && touch /d/f && rm -rf /d && test -e /d", "", 1},
		{"[ 3 -gt 2 ] && [ abc != abd ] && test -n x && ! test -z x", "", 0},
		{"test ! -f /etc/hostname", "", 1},
		{"[ 1 -lt", "sh: missing ]\n", 2},
		{"X=1; export Y=2; echo $X$Y ${Z:-3}", "12 3\n", 0},
		{"false; echo $?", "1\n", 0},
		{"echo -n a; echo b", "ab\n", 0},
		{"hostname", "pod-0\n", 0},
		{"exit 3; echo never", "", 3},
		{"mv /a /b", "mv: can't rename '/a': No such file or directory\n", 1},
		{"cat /tmp", "cat: read error: Is a directory\n", 1},
		{"sleep x", "sleep: invalid number 'x'\n", 1},
		{"echo 'single $X' \"double $HOSTNAME\" esc\\ aped", "single $X double pod-0 esc aped\n", 0},
	}
	for _, tc := range cases {
		c := Start(Spec{Image: "busybox", Command: []string{"sleep", "infinity"}, Hostname: "pod-0"}, t0)
		r := c.Exec(t0, []string{"sh", "-c", tc.script}, nil)
		if r.Output != tc.out || r.ExitCode != tc.code {
			t.Errorf("sh -c %q = %q, exit %d; want %q, exit %d", tc.script, r.Output, r.ExitCode, tc.out, tc.code)
		}
	}
}

func TestLogFrom(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := Start(Spec{Image: "busybox", Command: []string{"sh", "-c", "echo a; echo b; sleep 5; echo c; sleep 3600"}}, t0)
	lines, next := c.LogFrom(0)
	if len(lines) != 2 || lines[1].Text != "b" || next != 2 {
		t.Fatalf("LogFrom(0) at start = %v, %d; want a, b and 2", lines, next)
	}
	c.AdvanceTo(t0.Add(6 * time.Second))
	lines, next = c.LogFrom(next)
	if len(lines) != 1 || lines[0].Text != "c" || next != 3 {
		t.Fatalf("LogFrom(2) after the sleep = %v, %d; want c and 3", lines, next)
	}
	if lines, _ := c.LogFrom(next); len(lines) != 0 {
		t.Fatalf("LogFrom(3) = %v, want nothing new", lines)
	}
}

func TestAccessLog(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 23, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		image string
		do    func(c *Instance)
		want  string
	}{
		{"nginx logs a probe in the combined format, from the node, as kube-probe", "nginx:1.25",
			func(c *Instance) { _, _, _ = c.HTTPGet(t0, "http", 80, "/", nil) },
			`10.0.0.7 - - [06/Dec/2026:23:30:00 +0000] "GET / HTTP/1.1" 200 ` + fmt.Sprint(len(nginxIndex)) + ` "-" "kube-probe/1.36" "-"`},
		{"nginx logs a 404", "nginx:1.25",
			func(c *Instance) { _, _, _ = c.HTTPGet(t0, "http", 80, "/healthz", nil) },
			`10.0.0.7 - - [06/Dec/2026:23:30:00 +0000] "GET /healthz HTTP/1.1" 404 14 "-" "kube-probe/1.36" "-"`},
		{"a probe's User-Agent header replaces kube-probe's", "nginx:1.25",
			func(c *Instance) {
				_, _, _ = c.HTTPGet(t0, "http", 80, "/", []Header{{Name: "user-agent", Value: "my-probe"}, {Name: "User-Agent", Value: "second"}})
			},
			`10.0.0.7 - - [06/Dec/2026:23:30:00 +0000] "GET / HTTP/1.1" 200 ` + fmt.Sprint(len(nginxIndex)) + ` "-" "my-probe" "-"`},
		{"an empty User-Agent header sends none: nginx logs -", "nginx:1.25",
			func(c *Instance) { _, _, _ = c.HTTPGet(t0, "http", 80, "/", []Header{{Name: "User-Agent"}}) },
			`10.0.0.7 - - [06/Dec/2026:23:30:00 +0000] "GET / HTTP/1.1" 200 ` + fmt.Sprint(len(nginxIndex)) + ` "-" "-" "-"`},
		{"a curl inside the container comes from localhost", "nginx:1.25",
			func(c *Instance) { c.Exec(t0, []string{"curl", "-s", "http://localhost/"}, nil) },
			`127.0.0.1 - - [06/Dec/2026:23:30:00 +0000] "GET / HTTP/1.1" 200 ` + fmt.Sprint(len(nginxIndex)) + ` "-" "curl/8.5.0" "-"`},
		{"httpd logs the common format", "httpd:2.4",
			func(c *Instance) {
				_, _, _ = c.Request(t0, "http", 80, "/", Client{Addr: "127.0.0.1", Agent: "Go-http-client/1.1"})
			},
			`127.0.0.1 - - [06/Dec/2026:23:30:00 +0000] "GET / HTTP/1.1" 200 45`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Start(Spec{Image: tt.image, NodeIP: "10.0.0.7"}, t0)
			before := len(c.Log())
			tt.do(c)
			log := c.Log()
			if len(log) != before+1 || log[len(log)-1].Text != tt.want {
				t.Errorf("log after the request = %v, want one more line %q", log[before:], tt.want)
			}
		})
	}
	c := Start(Spec{Image: "redis"}, t0)
	before := len(c.Log())
	_ = c.Dial(t0, 6379)
	if len(c.Log()) != before {
		t.Errorf("a TCP connection to redis wrote %v", c.Log()[before:])
	}
}

// The log kept is bounded in lines and in bytes, the oldest lines dropped first, and
// LogFrom still counts every line written.
// A probe's httpHeaders reach the server: agnhost netexec's /header answers the value
// of the header its key names, the kubelet's defaults included.
func TestProbeHeadersReachTheServer(t *testing.T) {
	c := Start(Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec", "--http-port=8080"}}, t0)
	headers := []Header{{Name: "X-Custom", Value: "v1"}, {Name: "Host", Value: "example.com"}}
	tests := []struct {
		path    string
		headers []Header
		want    string
	}{
		{"/header?key=X-Custom", headers, "v1"},
		{"/header?key=x-custom", headers, "v1"},
		{"/header?key=X-Custom", nil, ""},
		{"/header?key=User-Agent", nil, ProbeAgent},
		{"/header?key=User-Agent", []Header{{Name: "User-Agent", Value: "mine"}}, "mine"},
		{"/header?key=Accept", nil, "*/*"},
		{"/header?key=Accept", []Header{{Name: "Accept", Value: "application/json"}}, "application/json"},
		{"/header?key=Host", headers, ""}, // Go's server keeps Host out of the headers
		{"/echo?msg=hello%20there", nil, "hello there"},
	}
	for _, tc := range tests {
		code, body, err := c.HTTPGet(t0.Add(time.Second), "http", 8080, tc.path, tc.headers)
		if code != 200 || body != tc.want || err != nil {
			t.Errorf("GET %s with %v = %d %q %v; want 200 %q", tc.path, tc.headers, code, body, err, tc.want)
		}
	}
}

func TestLogBounds(t *testing.T) {
	c := Start(Spec{Image: "pause"}, t0)
	for i := range 2*maxLogLines + 5 {
		c.write(t0, fmt.Sprintf("short %d", i))
	}
	if n := len(c.Log()); n != maxLogLines {
		t.Errorf("after %d short lines %d are kept; want %d", 2*maxLogLines+5, n, maxLogLines)
	}
	long := strings.Repeat("x", 999)
	for range 100 {
		c.write(t0, long)
	}
	log := c.Log()
	if len(log) != maxLogBytes/1000 || log[len(log)-1].Text != long {
		t.Errorf("after 100 lines of 1000 bytes %d are kept, the last %.10q; want the newest %d", len(log), log[len(log)-1].Text, maxLogBytes/1000)
	}
	if _, seq := c.LogFrom(0); seq != 2*maxLogLines+105 {
		t.Errorf("LogFrom counts %d lines written; want %d", seq, 2*maxLogLines+105)
	}
	c.write(t0, strings.Repeat("y", 2*maxLogBytes))
	if log := c.Log(); len(log) != 1 {
		t.Errorf("a line longer than the bound leaves %d lines; want it alone", len(log))
	}
}

// TestAgnhostTestWebserverProbeBreak is upstream's StatefulSet specs' sequence: the
// readiness probe GETs /localhost.crt from agnhost test-webserver, which serves the
// image's root; `/bin/sh -x -c "mv -v /localhost.crt /tmp/ || true"` breaks it and the
// move back restores it, and running either twice is harmless.
func TestAgnhostTestWebserverProbeBreak(t *testing.T) {
	c := Start(Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.55", Args: []string{"test-webserver"}}, t0)
	get := func(p string) int {
		code, _, err := c.HTTPGet(t0.Add(time.Second), "http", 80, p, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		return code
	}
	sh := func(cmd string) {
		if r := c.Exec(t0.Add(time.Second), []string{"/bin/sh", "-x", "-c", cmd}, nil); r.ExitCode != 0 {
			t.Fatalf("%s = %+v, want exit 0", cmd, r)
		}
	}
	if code := get("/localhost.crt"); code != 200 {
		t.Fatalf("GET /localhost.crt = %d, want 200", code)
	}
	if code := get("/"); code != 200 {
		t.Errorf("GET / (the root's listing) = %d, want 200", code)
	}
	if code := get("/nope"); code != 404 {
		t.Errorf("GET /nope = %d, want 404", code)
	}
	steps := []struct{ cmd, absent, present string }{
		{"mv -v /localhost.crt /tmp/ || true", "/localhost.crt", "/tmp/localhost.crt"},
		{"mv -v /tmp/localhost.crt / || true", "/tmp/localhost.crt", "/localhost.crt"},
	}
	for _, s := range steps {
		for range 2 {
			sh(s.cmd)
			if code := get(s.absent); code != 404 {
				t.Errorf("after %q: GET %s = %d, want 404", s.cmd, s.absent, code)
			}
			if code := get(s.present); code != 200 {
				t.Errorf("after %q: GET %s = %d, want 200", s.cmd, s.present, code)
			}
		}
	}
}

func TestEndsOnTerm(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want bool
	}{
		{"nginx, a server, ends on SIGTERM", Spec{Image: "nginx:1.25"}, true},
		{"agnhost netexec ends on SIGTERM", Spec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec"}}, true},
		{"an image kroll has no model of is taken to", Spec{Image: "example.com/app:1"}, true},
		{"busybox sleep 3600 as PID 1 ignores it", Spec{Image: "busybox", Command: []string{"sleep", "3600"}}, false},
		{"a shell script that sleeps ignores it", Spec{Image: "busybox", Command: []string{"sh", "-c", "touch /tmp/x; sleep 600"}}, false},
	}
	for _, tc := range tests {
		if got := Start(tc.spec, t0).EndsOnTerm(t0.Add(time.Second)); got != tc.want {
			t.Errorf("%s: EndsOnTerm = %v", tc.name, got)
		}
	}
}

// What a command writes to standard error before any output is told apart
// (StderrFirst), so a stream carrying both sends it first: tar's warning comes before
// its archive (kubectl cp reads the archive to its end and exits), an error before the
// echo that follows it.
func TestExec_stderrWrittenBeforeAnyOutput(t *testing.T) {
	c := Start(Spec{Image: "nginx:1.14.2"}, t0)
	c.Exec(t0, []string{"sh", "-c", "mkdir -p /tmp/out && echo A > /tmp/out/a.txt"}, nil)
	for _, tc := range []struct {
		argv           []string
		first, stderr  string
		stdoutNonEmpty bool
	}{
		{argv: []string{"tar", "cf", "-", "/tmp/out"}, first: "tar: Removing leading `/' from member names\n", stderr: "tar: Removing leading `/' from member names\n", stdoutNonEmpty: true},
		{argv: []string{"sh", "-c", "cat /nope; echo hi"}, first: "cat: can't open '/nope': No such file or directory\n", stderr: "cat: can't open '/nope': No such file or directory\n", stdoutNonEmpty: true},
		{argv: []string{"sh", "-c", "echo hi; cat /nope"}, first: "", stderr: "cat: can't open '/nope': No such file or directory\n", stdoutNonEmpty: true},
	} {
		r := c.Exec(t0, tc.argv, nil)
		if r.StderrFirst != tc.first || r.Stderr != tc.stderr || (r.Stdout != "") != tc.stdoutNonEmpty {
			t.Errorf("%q: StderrFirst %q, Stderr %q, Stdout %d bytes; want %q, %q", tc.argv, r.StderrFirst, r.Stderr, len(r.Stdout), tc.first, tc.stderr)
		}
	}
}
