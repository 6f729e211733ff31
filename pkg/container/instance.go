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
	Image   string
	Command []string
	Args    []string
	Env     map[string]string
	// Files are the files the container's volumes mount (a ConfigMap's keys under its
	// mount path), by absolute path; they shadow the image's own.
	Files    map[string]string
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
	// Traffic is the synthetic load its HTTP servers answer (metrics.go), as the
	// node's fault rules set it; the zero value is a healthy server's.
	Traffic Traffic
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
	logBytes int
	started  time.Time
	proc     *process
	now      time.Time // how far the main process has run
	wakeAt   time.Time // when the sleeping main process resumes; zero when not sleeping
	server   *Server   // what the main process serves, once it runs one
	// log[first:] are the lines kept (first moves on as lines are dropped, and the
	// slice is compacted every 32 lines dropped: no copy per line written).
	log       []logEntry
	first     int
	written   int    // lines ever written (log[first:] holds the last of them)
	scratch   []byte // an access line formatted to learn its length
	probeFrom Client // the kubelet's probes, as the access log names them
	init      bool   // an init container's (Spec.Init)
	ended     bool
	code      int
	endedAt   time.Time
	// input is the main process's standard input, when it is a shell reading commands
	// from it (Spec.Stdin); nil otherwise.
	input *mainInput
	// traffic is Spec.Traffic; serving is when the main process began to serve (the
	// load is counted from then), zero until it does.
	traffic Traffic
	serving time.Time
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
	for p, content := range spec.Files {
		fs.Write(p, content)
	}
	c := &Instance{image: img, fs: fs, started: now, now: now, probeFrom: Client{Addr: spec.NodeIP, Agent: ProbeAgent}, init: spec.Init, traffic: spec.Traffic}
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
		c.serving = now
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
		c.serving = at
		c.write(at, s.Log...)
	}
	if note != "" {
		c.write(at, "kroll: "+note)
	}
}

func (c *Instance) write(at time.Time, lines ...string) {
	for _, l := range lines {
		c.keep(logEntry{at: at, text: l, n: int32(len(l))})
	}
}

// logEntry is one line kept: a line as written, or (format set) a server's access
// line kept as its parts and formatted when read. An nginx pod probed every 10 s logs
// a line each time; 10,000 of them formatting a string per probe made garbage that
// brought on collections of the whole cluster's heap. 64 bytes a line, the line's
// text included for an access line (before: 40 and the text, about 100).
type logEntry struct {
	at     time.Time
	text   string // the line; for an access line, the path requested
	format AccessFormat
	client *Client // for an access line: who asked
	code   int32   // for an access line: the status and the body's size
	size   int32
	n      int32 // the line's length in bytes
}

// line is e as read.
func (e *logEntry) line() LogLine {
	if e.format == nil {
		return LogLine{At: e.at, Text: e.text}
	}
	b := e.format(make([]byte, 0, e.n), e.at, *e.client, e.text, int(e.code), int(e.size))
	return LogLine{At: e.at, Text: string(b)}
}

// access logs one request the server answered, in its access format. client must not
// change after (the instance's own probe client, or a copy).
func (c *Instance) access(at time.Time, client *Client, p string, code, size int) {
	c.scratch = c.server.Access(c.scratch[:0], at, *client, p, code, size)
	c.keep(logEntry{at: at, text: p, format: c.server.Access, client: client, code: int32(code), size: int32(size), n: int32(len(c.scratch))})
}

// keep adds e to the log and drops the oldest lines beyond the bounds: more than
// maxLogLines lines, or more than maxLogBytes bytes (newlines counted) while more
// than one line is kept.
func (c *Instance) keep(e logEntry) {
	c.log = append(c.log, e)
	c.logBytes += int(e.n) + 1
	c.written++
	for kept := len(c.log) - c.first; kept > maxLogLines || (kept > 1 && c.logBytes > maxLogBytes); kept-- {
		c.logBytes -= int(c.log[c.first].n) + 1
		c.log[c.first] = logEntry{}
		c.first++
	}
	if c.first >= 32 { // about 160 lines kept: a copy of them every 32 lines

		n := copy(c.log, c.log[c.first:])
		clear(c.log[n:])
		c.log, c.first = c.log[:n], 0
	}
}

// Next is when the main process next does something by itself (ends a sleep); ok is
// false when it never will (it ended, or runs for ever).
func (c *Instance) Next() (time.Time, bool) {
	return c.wakeAt, !c.ended && !c.wakeAt.IsZero()
}

// EndsOnTerm tells whether the main process, as it runs at now, ends when sent
// SIGTERM: a server does (nginx, redis, agnhost, pause, and the program of an image
// kroll has no model of is taken to); a shell script or a sleep running as PID 1 has
// no handler for it and, PID 1, ignores it: the kubelet's SIGKILL at the end of the
// grace period ends it.
func (c *Instance) EndsOnTerm(now time.Time) bool {
	c.AdvanceTo(now)
	return c.ended || c.server != nil
}

// Exited reports the main process's end: its exit code and when; ok false while it runs.
func (c *Instance) Exited() (code int, at time.Time, ok bool) {
	return c.code, c.endedAt, c.ended
}

// Log is what the instance wrote, oldest first.
func (c *Instance) Log() []LogLine { return c.lines(c.first) }

// lines is the kept lines from log[from:].
func (c *Instance) lines(from int) []LogLine {
	if from >= len(c.log) {
		return nil
	}
	out := make([]LogLine, 0, len(c.log)-from)
	for i := from; i < len(c.log); i++ {
		out = append(out, c.log[i].line())
	}
	return out
}

// LogFrom is what the instance wrote after its first seq lines (those still kept),
// and the count to ask from next time: how a follower reads only what is new.
func (c *Instance) LogFrom(seq int) ([]LogLine, int) {
	kept := len(c.log) - c.first
	skip := seq - (c.written - kept)
	skip = max(0, min(skip, kept))
	return c.lines(c.first + skip), c.written
}

// FS is the instance's file system (for inspection; writes through Exec).
func (c *Instance) FS() *FS { return c.fs }

// Image is the behaviour the instance runs.
func (c *Instance) Image() *Image { return c.image }

// anyPort is what listens on every port of a server that answers on any (its Port is
// not the port asked).
var anyPort = Listener{Protocol: HTTP, Serve: func(*FS, Get, time.Duration) (int, string) { return 200, "" }}

// listener is what listens on port now; nil when nothing does.
func (c *Instance) listener(now time.Time, port int32) *Listener {
	c.AdvanceTo(now)
	if c.ended || c.server == nil {
		return nil
	}
	if c.server.AnyPort {
		return &anyPort
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

// HTTPGet requests path (with its query, if any) on port with scheme "http" or
// "https", sending headers as the kubelet's httpGet probe does: the status code and
// body, or ErrRefused / ErrNotHTTP / ErrNotTLS. A User-Agent among headers replaces
// the probe's own (kube-probe/1.36; an empty one sends none) and a Host header is the
// request's host, as the kubelet's prober sends them. The model's servers speak plain
// HTTP, except a server that answers every port (an image kroll has no model of),
// which is taken to speak whatever it is asked. It is the kubelet's probe: the server's
// access log records it so.
func (c *Instance) HTTPGet(now time.Time, scheme string, port int32, p string, headers []Header) (int, string, error) {
	client := c.probeFrom
	var host string
	for _, h := range headers {
		switch {
		case strings.EqualFold(h.Name, "User-Agent") && client.Agent == ProbeAgent:
			client.Agent = h.Value
		case strings.EqualFold(h.Name, "Host") && host == "":
			host = h.Value
		}
	}
	if client == c.probeFrom {
		return c.get(now, scheme, port, p, host, headers, &c.probeFrom)
	}
	other := client
	return c.get(now, scheme, port, p, host, headers, &other)
}

// Request is a GET of path from client (a program in the container, a port-forward):
// a server with an access format logs the request.
func (c *Instance) Request(now time.Time, scheme string, port int32, p string, client Client) (int, string, error) {
	if client == localClient {
		return c.get(now, scheme, port, p, "", nil, &localClient)
	}
	other := client
	return c.get(now, scheme, port, p, "", nil, &other)
}

func (c *Instance) get(now time.Time, scheme string, port int32, p, host string, headers []Header, client *Client) (int, string, error) {
	l := c.listener(now, port)
	switch {
	case l == nil:
		return 0, "", ErrRefused
	case l.Protocol != HTTP || l.Serve == nil:
		return 0, "", ErrNotHTTP
	case scheme == "https" && !c.server.AnyPort:
		return 0, "", ErrNotTLS
	}
	p, query, _ := strings.Cut(p, "?")
	if p == "" {
		p = "/"
	}
	g := Get{Path: cleanPath(p), Query: query, Host: host, Agent: client.Agent, Headers: headers}
	var code int
	var body string
	if g.Path == MetricsPath {
		code, body = 200, c.traffic.Counts(now.Sub(c.serving)).Exposition()
	} else {
		code, body = l.Serve(c.fs, g, now.Sub(c.started))
	}
	if c.server.Access != nil {
		c.access(now, client, p, code, len(body))
	}
	return code, body, nil
}

// cleanPath is p cleaned and rooted, without a copy when it already is (a probe's "/").
func cleanPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Clean("/" + p)
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
	Output string // standard output and error, as a probe reads them
	Stdout string // of Output, the standard output
	Stderr string // of Output, the standard error
	// StderrFirst is the part of Stderr written before any standard output: a stream
	// that carries both in order sends it first.
	StderrFirst string
	ExitCode    int           // its exit status
	Took        time.Duration // how long it ran; Forever when it does not end
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
	return ExecResult{Output: b.output, Stdout: b.stdout, Stderr: b.stderr, StderrFirst: b.lead, ExitCode: b.code, Took: took}
}

func (c *Instance) hostname() string {
	h, _ := c.fs.Read("/etc/hostname")
	return h
}
