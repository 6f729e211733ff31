package container

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Spec is what a container runs: its image, command, args and environment, and the
// pod's hostname (what `hostname` prints and serve-hostname answers).
type Spec struct {
	Image    string
	Command  []string
	Args     []string
	Env      map[string]string
	Hostname string
	// NodeIP is the address the kubelet's probes come from (its access-log lines).
	NodeIP string
	// Init marks an init container's process, which is expected to do its work and
	// end: a program of an image kroll has no model of (its own entrypoint, or a
	// command it ships) is taken to end successfully at once, as the servers of such an
	// image are taken to be healthy. A known image's server still runs until stopped.
	Init bool
	// Stdin and TTY are the container's stdin and tty: a shell as the main process with
	// stdin open reads its commands from it (kubectl attach -i), rather than ending at
	// once; with TTY it prompts.
	Stdin, TTY bool
}

// LogLine is one line the container wrote.
type LogLine struct {
	At   time.Time
	Text string
}

// The log kept per instance is bounded by lines and by bytes, the oldest lines dropped
// first: a real kubelet rotates at 10 MiB on disk, but a simulated node holds every
// container's log in memory, and an nginx probed every 10 s writes an access line each
// time — 10,000 such pods keep at most 160 MiB here.
const (
	maxLogLines = 1000
	maxLogBytes = 16 << 10
)

// Instance is one run of a container: its files, its main process and its log. It is
// a pure model driven by the caller's clock: AdvanceTo(now) runs the main process up to
// now (its sleeps end, its commands run), and what a probe or an exec sees is what the
// instance holds at that instant. A restart is a new Instance: files written by the
// previous one are gone, as on a real node.
type Instance struct {
	image *Image
	fs    *FS
	// logBytes is the size of log's lines, each with its newline.
	logBytes  int
	started   time.Time
	proc      *process
	now       time.Time // how far the main process has run
	wakeAt    time.Time // when the sleeping main process resumes; zero when not sleeping
	server    *Server   // what the main process serves, once it runs one
	log       []LogLine
	written   int    // lines ever written (log holds the last of them)
	probeFrom Client // the kubelet's probes, as the access log names them
	init      bool   // an init container's (Spec.Init)
	ended     bool
	code      int
	endedAt   time.Time
	// input is the main process's standard input, when it is a shell reading commands
	// from it (Spec.Stdin); nil otherwise.
	input *mainInput
}

// baseDirs are the directories every image has.
var baseDirs = []string{"/tmp", "/etc", "/root", "/home", "/var/log", "/var/run", "/usr/bin", "/bin", "/dev", "/proc"}

// ErrRefused is the error of a connection to a port nothing listens on.
var ErrRefused = errors.New("connect: connection refused")

// Start starts an instance of spec at now and runs its main process up to now.
func Start(spec Spec, now time.Time) *Instance {
	img := Lookup(spec.Image)
	files := map[string]string{}
	for k, v := range img.Files {
		files[k] = v
	}
	files["/etc/hostname"] = spec.Hostname + "\n"
	env := map[string]string{"HOSTNAME": spec.Hostname, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
	for k, v := range spec.Env {
		env[k] = v
	}
	fs := NewFS(files)
	for _, d := range baseDirs {
		fs.Mkdir(d)
	}
	c := &Instance{image: img, fs: fs, started: now, now: now, probeFrom: Client{Addr: spec.NodeIP, Agent: ProbeAgent}, init: spec.Init}
	argv := img.Argv(spec.Command, spec.Args)
	if img.Generic && len(spec.Command) == 0 && spec.Init {
		c.proc = &process{}
		c.ended, c.endedAt = true, now
		return c
	}
	if img.Generic && len(spec.Command) == 0 {
		// An image kroll has no model of, running its own entrypoint: assumed to be a
		// healthy server on every port.
		c.server = &Server{Name: img.Repository, AnyPort: true}
		c.proc = &process{}
		return c
	}
	if spec.Stdin && ReadsCommands(argv) {
		c.proc = &process{env: env}
		c.input = &mainInput{open: true, tty: spec.TTY, prompt: img.prompt(argv[0], spec.Hostname)}
		return c
	}
	p, note := newProcess(argv, env)
	if p == nil {
		c.forever(now, nil, fmt.Sprintf("the simulated node does not interpret the command %q (%s); it is taken as a process that runs until stopped", strings.Join(argv, " "), note))
		c.proc = &process{}
		return c
	}
	c.proc = p
	c.step(now)
	return c
}

// AdvanceTo runs the main process up to now (a time before the last one is ignored).
func (c *Instance) AdvanceTo(now time.Time) {
	for !c.ended && !c.wakeAt.IsZero() && !now.Before(c.wakeAt) {
		at := c.wakeAt
		c.wakeAt = time.Time{}
		c.step(at)
	}
	if now.After(c.now) {
		c.now = now
	}
}

// step runs one burst of the main process at instant at.
func (c *Instance) step(at time.Time) {
	c.now = at
	get := func(port int32, path string) (int, string, error) {
		return c.Request(at, "http", port, path, localClient)
	}
	b := c.proc.run(shellEnv{fs: c.fs, image: c.image, init: c.init, get: get, now: at})
	c.write(at, logLines(b.output)...)
	switch {
	case b.ended && c.input != nil && !b.exit:
		c.proc.last = b.code
		c.nextInput(at)
	case b.forever:
		note := b.note
		if b.server == nil && c.image.Generic {
			// A generic image's own program: taken as its server.
			b.server, note = &Server{Name: c.image.Repository, AnyPort: true}, ""
		}
		c.forever(at, b.server, note)
	case b.ended:
		c.ended, c.code, c.endedAt = true, b.code, at
	default:
		c.wakeAt = at.Add(b.sleep)
	}
}

func (c *Instance) forever(at time.Time, s *Server, note string) {
	c.server = s
	if s != nil {
		c.write(at, s.Log...)
	}
	if note != "" {
		c.write(at, "kroll: "+note)
	}
}

func (c *Instance) write(at time.Time, lines ...string) {
	for _, l := range lines {
		c.log = append(c.log, LogLine{At: at, Text: l})
		c.logBytes += len(l) + 1
	}
	c.written += len(lines)
	n := max(0, len(c.log)-maxLogLines)
	for i := 0; i < n; i++ {
		c.logBytes -= len(c.log[i].Text) + 1
	}
	for n < len(c.log)-1 && c.logBytes > maxLogBytes {
		c.logBytes -= len(c.log[n].Text) + 1
		n++
	}
	if n > 0 {
		c.log = append(c.log[:0], c.log[n:]...)
	}
}

// Next is when the main process next does something by itself (ends a sleep); ok is
// false when it never will (it ended, or runs for ever).
func (c *Instance) Next() (time.Time, bool) {
	return c.wakeAt, !c.ended && !c.wakeAt.IsZero()
}

// Exited reports the main process's end: its exit code and when; ok false while it runs.
func (c *Instance) Exited() (code int, at time.Time, ok bool) {
	return c.code, c.endedAt, c.ended
}

// Log is what the instance wrote, oldest first.
func (c *Instance) Log() []LogLine { return append([]LogLine(nil), c.log...) }

// LogFrom is what the instance wrote after its first seq lines (those still kept),
// and the count to ask from next time: how a follower reads only what is new.
func (c *Instance) LogFrom(seq int) ([]LogLine, int) {
	skip := seq - (c.written - len(c.log))
	skip = max(0, min(skip, len(c.log)))
	return append([]LogLine(nil), c.log[skip:]...), c.written
}

// FS is the instance's file system (for inspection; writes through Exec).
func (c *Instance) FS() *FS { return c.fs }

// Image is the behaviour the instance runs.
func (c *Instance) Image() *Image { return c.image }

// listener is what listens on port now; nil when nothing does.
func (c *Instance) listener(now time.Time, port int32) *Listener {
	c.AdvanceTo(now)
	if c.ended || c.server == nil {
		return nil
	}
	if c.server.AnyPort {
		return &Listener{Port: port, Protocol: HTTP, Serve: func(*FS, string, time.Duration) (int, string) { return 200, "" }}
	}
	for i := range c.server.Listen {
		if c.server.Listen[i].Port == port {
			return &c.server.Listen[i]
		}
	}
	return nil
}

// Ports is what the instance listens on now (nil for "every port" as well as none;
// see Server.AnyPort).
func (c *Instance) Ports(now time.Time) []Listener {
	c.AdvanceTo(now)
	if c.ended || c.server == nil {
		return nil
	}
	return c.server.Listen
}

// Dial connects to a TCP port: nil when something listens there.
func (c *Instance) Dial(now time.Time, port int32) error {
	if c.listener(now, port) == nil {
		return ErrRefused
	}
	return nil
}

// ErrNotHTTP is the error of an HTTP request to a port that speaks something else.
var ErrNotHTTP = errors.New("net/http: HTTP/1.x transport connection broken: malformed HTTP response")

// ErrNotTLS is the error of an HTTPS request to a port that speaks plain HTTP.
var ErrNotTLS = errors.New("http: server gave HTTP response to HTTPS client")

// HTTPGet requests path on port with scheme "http" or "https": the status code and
// body, or ErrRefused / ErrNotHTTP / ErrNotTLS. A query string is ignored. The model's
// servers speak plain HTTP, except a server that answers every port (an image kroll has
// no model of), which is taken to speak whatever it is asked. It is the kubelet's
// probe: the server's access log records it so.
func (c *Instance) HTTPGet(now time.Time, scheme string, port int32, p string) (int, string, error) {
	return c.Request(now, scheme, port, p, c.probeFrom)
}

// Request is HTTPGet from client: a server with an access format logs the request.
func (c *Instance) Request(now time.Time, scheme string, port int32, p string, client Client) (int, string, error) {
	l := c.listener(now, port)
	switch {
	case l == nil:
		return 0, "", ErrRefused
	case l.Protocol != HTTP || l.Serve == nil:
		return 0, "", ErrNotHTTP
	case scheme == "https" && !c.server.AnyPort:
		return 0, "", ErrNotTLS
	}
	p, _, _ = strings.Cut(p, "?")
	if p == "" {
		p = "/"
	}
	code, body := l.Serve(c.fs, path.Clean("/"+p), now.Sub(c.started))
	if c.server.Access != nil {
		c.write(now, c.server.Access(now, client, p, code, len(body)))
	}
	return code, body, nil
}

// GRPCHealth calls grpc.health.v1.Health/Check on port: serving, or the probe's
// failure message.
func (c *Instance) GRPCHealth(now time.Time, port int32, service string) (bool, error) {
	l := c.listener(now, port)
	switch {
	case l == nil:
		return false, ErrRefused
	case l.Protocol == GRPC || c.server.AnyPort:
		return true, nil
	}
	return false, errors.New("this server does not implement the grpc health protocol (grpc.health.v1.Health)")
}

// ExecResult is what an exec in the container did.
type ExecResult struct {
	Output   string        // standard output and error, as a probe reads them
	Stdout   string        // of Output, the standard output
	Stderr   string        // of Output, the standard error
	ExitCode int           // its exit status
	Took     time.Duration // how long it ran; Forever when it does not end
}

// Exec runs argv in the container at now (after its main process has run up to now).
// Its changes to files stay for the instance's life. An exec whose command is not
// understood, or runs for ever, took Forever. It has no standard input.
func (c *Instance) Exec(now time.Time, argv []string, env map[string]string) ExecResult {
	return c.ExecInput(now, argv, env, nil)
}

// ExecInput is Exec with stdin as its standard input (nil for none): what cat, tar x
// or a redirected cat read (kubectl exec -i, kubectl cp).
func (c *Instance) ExecInput(now time.Time, argv []string, env map[string]string, stdin *string) ExecResult {
	c.AdvanceTo(now)
	if len(argv) == 0 {
		return ExecResult{ExitCode: 126, Output: "OCI runtime exec failed: exec failed: no command given"}
	}
	all := map[string]string{"HOSTNAME": strings.TrimSpace(c.hostname())}
	for k, v := range env {
		all[k] = v
	}
	p, _ := newProcess(argv, all)
	if p == nil {
		return ExecResult{Took: Forever}
	}
	get := func(port int32, path string) (int, string, error) {
		return c.Request(now, "http", port, path, localClient)
	}
	b, took := p.runToEnd(shellEnv{fs: c.fs, image: c.image, exec: true, get: get, stdin: stdin, now: now})
	return ExecResult{Output: b.output, Stdout: b.stdout, Stderr: b.stderr, ExitCode: b.code, Took: took}
}

func (c *Instance) hostname() string {
	h, _ := c.fs.Read("/etc/hostname")
	return h
}
