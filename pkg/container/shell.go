package container

import (
	"path"
	"strconv"
	"strings"
	"time"
)

// Forever is the duration of a command that does not end by itself.
const Forever = time.Duration(1<<63 - 1)

// process is a running script: its steps, where it stands and the last exit code. It
// runs in bursts: run executes steps until the script ends, sleeps or starts something
// that runs forever, so that the container's clock decides when it resumes.
type process struct {
	steps []step
	pc    int
	last  int
	env   map[string]string
}

// burst is what one run of a process did.
type burst struct {
	output  string        // what it wrote to standard output and error, as written
	stdout  string        // of output, what went to standard output
	stderr  string        // of output, what went to standard error
	lead    string        // of stderr, what it wrote before any standard output
	ended   bool          // the script ended; exitCode is its status
	exit    bool          // it ended by `exit`, not by running out of commands
	code    int           // exit code, when ended
	sleep   time.Duration // the script sleeps this long, then resumes; 0 when ended or forever
	forever bool          // the script runs something that does not end
	server  *Server       // what runs forever, when it is one of the image's servers
	note    string        // why it runs forever, when it is not a server the image provides
}

// shellEnv is what a script runs against: the container's files and image.
type shellEnv struct {
	fs    *FS
	image *Image
	exec  bool // an exec into the container, not its main process
	init  bool // an init container's main process (Spec.Init)
	// stdin is what is left of the standard input (a reader such as cat takes it all);
	// nil when there is none (as /dev/null).
	stdin *string
	// now is the instant the script runs at (the times tar records).
	now time.Time
	// get requests path on one of the container's own ports (curl and wget of
	// localhost); nil when there is nothing to ask.
	get func(port int32, path string) (int, string, error)
}

// newProcess is argv (the container's command and args, or an exec's command) as a
// process. ok is false when it is not understood (note says what).
func newProcess(argv []string, env map[string]string) (*process, string) {
	p := &process{env: map[string]string{}}
	for k, v := range env {
		p.env[k] = v
	}
	if len(argv) == 0 {
		return p, ""
	}
	if isShell(argv[0]) {
		script, ok := shellScript(argv[1:])
		if !ok {
			// `sh` with no -c reads its standard input, which a container does not
			// have: it ends at once, successfully.
			return p, ""
		}
		steps, err := parseScript(script)
		if err != nil {
			return nil, err.Error()
		}
		p.steps = steps
		return p, ""
	}
	w := make([]word, len(argv))
	for i, a := range argv {
		w[i] = word{{lit: a}}
	}
	p.steps = []step{{op: ";", words: w}}
	return p, ""
}

func isShell(arg0 string) bool {
	switch path.Base(arg0) {
	case "sh", "bash", "ash", "dash":
		return true
	}
	return false
}

// shellScript is the script of `sh [-e|-x…] -c script`.
func shellScript(args []string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "-c" && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(a, "-") && strings.HasSuffix(a, "c") && i+1 < len(args):
			return args[i+1], true // -ec, -xc
		case strings.HasPrefix(a, "-"):
			continue
		}
		return "", false
	}
	return "", false
}

// run executes steps from where the process stands.
func (p *process) run(sh shellEnv) burst {
	var b burst
	for ; p.pc < len(p.steps); p.pc++ {
		s := p.steps[p.pc]
		if (s.op == "&&" && p.last != 0) || (s.op == "||" && p.last == 0) {
			continue
		}
		argv := make([]string, 0, len(s.words))
		for _, w := range s.words {
			argv = append(argv, p.expand(w))
		}
		r := p.command(sh, argv)
		if r.exit {
			b.ended, b.exit, b.code = true, true, r.code
			b.put(r)
			p.pc = len(p.steps)
			return b
		}
		if s.redirect != "" && s.redirect != "/dev/null" {
			prev, _ := sh.fs.Read(s.redirect)
			if !s.appendTo {
				prev = ""
			}
			if !sh.fs.Write(s.redirect, prev+r.out) {
				r.code = 1
				b.err("sh: can't create " + s.redirect + ": Is a directory\n")
			}
		} else if s.redirect == "" {
			b.put(r)
			r.errs = nil
		}
		b.err(errLines(r.errs))
		p.last = r.code
		switch {
		case r.forever:
			b.forever, b.server, b.note = true, r.server, r.note
			p.pc = len(p.steps)
			return b
		case r.sleep > 0:
			p.pc++
			b.sleep = r.sleep
			return b
		}
	}
	b.ended, b.code = true, p.last
	return b
}

func (b *burst) out(s string) { b.output += s; b.stdout += s }
func (b *burst) err(s string) {
	b.output += s
	b.stderr += s
	if b.stdout == "" {
		b.lead += s
	}
}

// put writes r's output and error lines, in the order the command wrote them.
func (b *burst) put(r result) {
	if r.errsFirst {
		b.err(errLines(r.errs))
		b.out(r.out)
		return
	}
	b.out(r.out)
	b.err(errLines(r.errs))
}

// runToEnd runs the process through its sleeps: all it wrote (b.output, b.stdout,
// b.stderr), its exit code (b.code, b.exit when by `exit`) and how long it took;
// b.forever when it does not end.
func (p *process) runToEnd(sh shellEnv) (all burst, took time.Duration) {
	for {
		b := p.run(sh)
		all.err(b.lead)
		all.out(b.stdout)
		all.err(b.stderr[len(b.lead):])
		switch {
		case b.forever:
			all.forever = true
			return all, Forever
		case b.ended:
			all.ended, all.exit, all.code = true, b.exit, b.code
			return all, took
		}
		took += b.sleep
	}
}

func (p *process) expand(w word) string {
	var s strings.Builder
	for _, pt := range w {
		switch {
		case pt.name == "?":
			s.WriteString(strconv.Itoa(p.last))
		case pt.name != "":
			v, ok := p.env[pt.name]
			if (!ok || v == "") && pt.hasDef {
				v = pt.def
			}
			s.WriteString(v)
		default:
			s.WriteString(pt.lit)
		}
	}
	return s.String()
}

// result is one command's effect.
type result struct {
	out     string   // standard output
	errs    []string // standard error lines (always to the log)
	code    int
	exit    bool // `exit`: the script ends with code
	sleep   time.Duration
	forever bool
	server  *Server
	note    string
	// errsFirst: its error lines were written before its output (tar's warnings
	// before the archive), not after.
	errsFirst bool
}

// errLines is standard error lines as written.
func errLines(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return strings.Join(errs, "\n") + "\n"
}

// logLines splits output into the lines a log shows (a last line without its newline
// is a line too).
func logLines(output string) []string {
	if output == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(output, "\n"), "\n")
}

// command runs one simple command.
func (p *process) command(sh shellEnv, argv []string) result {
	// Leading assignments (X=1 cmd, or X=1 alone) set the environment.
	for len(argv) > 0 {
		name, val, ok := strings.Cut(argv[0], "=")
		if !ok || !isName(name) {
			break
		}
		p.env[name] = val
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return result{}
	}
	name := path.Base(argv[0])
	if name == "exec" || name == "nohup" || name == "docker-entrypoint.sh" {
		return p.command(sh, argv[1:])
	}
	if isShell(argv[0]) {
		script, ok := shellScript(argv[1:])
		if !ok {
			return result{}
		}
		steps, err := parseScript(script)
		if err != nil {
			return result{forever: true, note: err.Error()}
		}
		sub := &process{steps: steps, env: p.env}
		b, took := sub.runToEnd(sh)
		errs := logLines(b.stderr)
		if b.forever {
			return result{out: b.stdout, errs: errs, forever: true, note: "a nested shell that does not end"}
		}
		return result{out: b.stdout, errs: errs, code: b.code, sleep: took}
	}
	if b, ok := builtins[name]; ok {
		return b(p, sh, argv[1:])
	}
	if sh.image != nil {
		if r, ok := sh.image.program(name, argv[1:]); ok {
			return r
		}
		if sh.image.Generic && (sh.exec || sh.init) {
			// A tool of an image kroll knows nothing of (its own health check, an init
			// container's migration): taken to succeed, as the image's servers are
			// taken to be healthy.
			return result{}
		}
	}
	return result{forever: true, note: "the simulated node does not interpret " + strconv.Quote(strings.Join(argv, " ")) + "; it is taken as a process that runs until stopped"}
}
