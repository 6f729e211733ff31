package container

import (
	"path"
	"strings"
	"time"
)

// Standard input, in three shapes:
//
//   - a command that reads it to its end (cat with no file, `cat > f`, tar x -f -):
//     ReadsStdin tells the caller to gather the input first, then ExecInput runs the
//     command with it;
//   - a shell that reads its commands from it (kubectl exec -i POD -- sh): a Shell
//     runs them line by line, each as a `sh -c` script would run, prompting with a tty
//     as busybox's ash, dash or bash would ("/ # ", "# ", "root@host:/# ");
//   - the main process's own (a container with stdin: true running sh, kubectl attach
//     -i): Input hands it a line, CloseStdin its end.

// ReadsCommands tells a shell started without a script (`sh`, `sh -i`, `bash -l`),
// which reads its commands from its standard input.
func ReadsCommands(argv []string) bool {
	if len(argv) == 0 || !isShell(argv[0]) {
		return false
	}
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") || strings.Contains(a, "c") {
			return false // a script file, or -c script
		}
	}
	return true
}

// ReadsStdin tells whether argv (an exec's command) reads its standard input: cat of
// no file or of "-", tar extracting or listing from "-", a shell reading its commands,
// directly or as a step of `sh -c`. A command that does not read it runs at once,
// without waiting for the input to end (kubectl exec -i POD -- ls).
func ReadsStdin(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if isShell(argv[0]) {
		if ReadsCommands(argv) {
			return true
		}
		script, ok := shellScript(argv[1:])
		if !ok {
			return false
		}
		steps, err := parseScript(script)
		if err != nil {
			return false
		}
		for _, s := range steps {
			words := make([]string, 0, len(s.words))
			for _, w := range s.words {
				words = append(words, literal(w))
			}
			if ReadsStdin(withoutAssignments(words)) {
				return true
			}
		}
		return false
	}
	args := argv[1:]
	switch path.Base(argv[0]) {
	case "cat":
		ops := operands(args)
		if len(ops) == 0 {
			return true
		}
		for _, o := range ops {
			if o == "-" {
				return true
			}
		}
	case "tar":
		o, err := parseTarArgs(args)
		return err == "" && o.mode != 'c' && o.file == "-"
	case "exec", "nohup":
		return ReadsStdin(args)
	}
	return false
}

func withoutAssignments(argv []string) []string {
	for len(argv) > 0 {
		name, _, ok := strings.Cut(argv[0], "=")
		if !ok || !isName(name) {
			break
		}
		argv = argv[1:]
	}
	return argv
}

// prompt is what an interactive shell argv0 of this image prints before each command
// for root in /: busybox's ash "/ # ", bash "root@host:/# ", dash (Debian's sh) "# ".
func (img *Image) prompt(argv0, hostname string) string {
	switch base := path.Base(argv0); {
	case base == "bash":
		return "root@" + hostname + ":/# "
	case base == "ash" || img.busybox:
		return "/ # "
	}
	return "# "
}

// Shell is an exec'd shell reading its commands from standard input, one line at a
// time, against its instance: its variables and $? last from line to line.
type Shell struct {
	c      *Instance
	p      *process
	prompt string
}

// Shell starts argv (ReadsCommands) in the container: tty says whether it prompts.
func (c *Instance) Shell(argv []string, env map[string]string, tty bool) *Shell {
	all := map[string]string{"HOSTNAME": strings.TrimSpace(c.hostname())}
	for k, v := range env {
		all[k] = v
	}
	s := &Shell{c: c, p: &process{env: all}}
	if tty && len(argv) > 0 {
		s.prompt = c.image.prompt(argv[0], all["HOSTNAME"])
	}
	return s
}

// Prompt is what the shell prints before reading a command: "" without a tty.
func (s *Shell) Prompt() string { return s.prompt }

// LineResult is what one line of an interactive shell did.
type LineResult struct {
	Stdout, Stderr string
	// Took is how long it ran (its sleeps); Forever when it does not end.
	Took time.Duration
	// Exited is true when the line ran `exit`: the shell ends with Code.
	Exited bool
	Code   int
}

// Line runs one line at now. A line the subset does not read is a syntax error, as
// the shell reports one (status 2), and the shell goes on.
func (s *Shell) Line(now time.Time, line string) LineResult {
	s.c.AdvanceTo(now)
	if strings.TrimSpace(line) == "" {
		return LineResult{}
	}
	steps, err := parseScript(line)
	if err != nil {
		s.p.last = 2
		return LineResult{Stderr: "sh: " + err.Error() + "\n", Code: 2}
	}
	s.p.steps, s.p.pc = steps, 0
	get := func(port int32, path string) (int, string, error) {
		return s.c.Request(now, "http", port, path, localClient)
	}
	b, took := s.p.runToEnd(shellEnv{fs: s.c.fs, image: s.c.image, exec: true, get: get, now: now})
	s.p.last = b.code
	return LineResult{Stdout: b.stdout, Stderr: b.stderr, Took: took, Exited: b.exit, Code: b.code}
}

// Last is the status of the shell's last command: what it ends with at the end of
// its input.
func (s *Shell) Last() int { return s.p.last }

// mainInput is the standard input of a main process that is a shell reading it.
type mainInput struct {
	open    bool     // not yet at its end
	tty     bool     // the container has a tty: the shell prompts and echoes
	prompt  string   // its prompt, with a tty
	pending []string // lines received while a command still runs
}

// ReadsInput tells whether the main process is a shell reading its standard input
// (Spec.Stdin) that has not ended: what it does next depends on Input, not on the
// clock alone.
func (c *Instance) ReadsInput() bool {
	return c.input != nil && !c.ended
}

// Input gives the main process one line of its standard input at now: the shell runs
// it (its output goes to the log, after the prompt and the line itself with a tty, as
// a terminal shows them), or queues it while a command still sleeps. False when the
// main process reads no input (or has ended).
func (c *Instance) Input(now time.Time, line string) bool {
	c.AdvanceTo(now)
	if !c.ReadsInput() || !c.input.open {
		return false
	}
	c.input.pending = append(c.input.pending, line)
	if c.wakeAt.IsZero() {
		c.nextInput(now)
	}
	return true
}

// CloseStdin is the end of the main process's standard input (an attach with
// stdinOnce ends): the shell exits with its last status once its command is done.
func (c *Instance) CloseStdin(now time.Time) {
	c.AdvanceTo(now)
	if !c.ReadsInput() {
		return
	}
	c.input.open = false
	if c.wakeAt.IsZero() {
		c.nextInput(now)
	}
}

// nextInput runs the next pending line of the main shell, or waits for one; at the
// end of its input, the shell ends.
func (c *Instance) nextInput(at time.Time) {
	for len(c.input.pending) > 0 {
		line := c.input.pending[0]
		c.input.pending = c.input.pending[1:]
		if c.input.tty {
			c.write(at, c.input.prompt+line)
		}
		steps, err := parseScript(line)
		if err != nil {
			c.write(at, "sh: "+err.Error())
			c.proc.last = 2
			continue
		}
		if len(steps) == 0 {
			continue
		}
		c.proc.steps, c.proc.pc = steps, 0
		c.step(at) // runs the line; back here through step when it ends without exit
		return
	}
	if !c.input.open && !c.ended {
		c.ended, c.code, c.endedAt = true, c.proc.last, at
	}
}
