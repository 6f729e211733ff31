package kubelet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/kroll-dev/kroll/pkg/container"
)

// maxStdin bounds what an exec's command that reads its input (cat > f, tar x for
// kubectl cp) may be given: the simulated container keeps its files in memory.
const maxStdin = 16 << 20

// ExecInContainer runs cmd in the instance with the shell subset, as a runtime runs an
// exec: a shell reading its commands gets them line by line from in (interactive, with
// a prompt, when tty), a command that reads its input (cat, tar x) gets all of in, any
// other runs at once. Standard output goes to out, standard error to errOut (both to
// out with a tty, which also turns "\n" into "\r\n"); the exit status is the error's.
func (t *streamTarget) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	go drainResize(ctx, resize)
	w := newExecWriters(out, errOut, tty)
	var code int
	switch {
	case in != nil && container.ReadsCommands(cmd):
		code = t.interactiveShell(ctx, cmd, in, w, tty)
	case in != nil && container.ReadsStdin(cmd):
		data, err := readInput(in, w, tty)
		if err != nil {
			w.stderr("kroll: " + err.Error() + "\n")
			code = 1
			break
		}
		code = t.execOnce(ctx, cmd, &data, w)
	default:
		code = t.execOnce(ctx, cmd, nil, w)
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// execOnce runs cmd with stdin (nil for none), writes what it wrote and holds the
// stream for as long as it ran (bounded by maxExecWait); its exit code.
func (t *streamTarget) execOnce(ctx context.Context, cmd []string, stdin *string, w execWriters) int {
	t.run.mu.Lock()
	res := t.run.inst.ExecInput(time.Now(), cmd, nil, stdin)
	t.run.mu.Unlock()
	// What it wrote to standard error before any output goes first (tar's warning
	// before its archive: `kubectl cp` ends with the archive and would miss it).
	w.stderr(res.StderrFirst)
	w.stdout(res.Stdout)
	w.stderr(res.Stderr[len(res.StderrFirst):])
	hold(ctx, res.Took)
	return res.ExitCode
}

// interactiveShell runs `sh` reading its commands from in: a prompt before each with a
// tty, each line through the shell subset, until `exit N` (its code) or the end of the
// input (the last command's status).
func (t *streamTarget) interactiveShell(ctx context.Context, cmd []string, in io.Reader, w execWriters, tty bool) int {
	t.run.mu.Lock()
	sh := t.run.inst.Shell(cmd, nil, tty)
	t.run.mu.Unlock()
	lines := newLineReader(in, w.out, tty)
	for {
		w.stdout(sh.Prompt())
		line, err := lines.next()
		switch {
		case errors.Is(err, errInterrupt):
			continue
		case err != nil:
			t.run.mu.Lock()
			last := sh.Last()
			t.run.mu.Unlock()
			return last
		}
		t.run.mu.Lock()
		res := sh.Line(time.Now(), line)
		t.run.mu.Unlock()
		w.stdout(res.Stdout)
		w.stderr(res.Stderr)
		hold(ctx, res.Took)
		if res.Exited || ctx.Err() != nil {
			return res.Code
		}
	}
}

// hold waits took (a command's sleeps), at most maxExecWait, or until the client goes.
func hold(ctx context.Context, took time.Duration) {
	if took <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(min(took, maxExecWait)):
	}
}

func drainResize(ctx context.Context, resize <-chan remotecommand.TerminalSize) {
	if resize == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-resize:
			if !ok {
				return
			}
		}
	}
}

// readInput is all of an exec's input: raw bytes, or with a tty the lines typed up to
// ^D (echoed, as a terminal does).
func readInput(in io.Reader, w execWriters, tty bool) (string, error) {
	if !tty {
		b, err := io.ReadAll(io.LimitReader(in, maxStdin+1))
		if len(b) > maxStdin {
			return "", fmt.Errorf("the input is larger than the %d MiB a simulated container takes", maxStdin>>20)
		}
		return string(b), err
	}
	lines := newLineReader(in, w.out, true)
	var b strings.Builder
	for b.Len() <= maxStdin {
		line, err := lines.next()
		if err != nil {
			return b.String(), nil
		}
		b.WriteString(line + "\n")
	}
	return "", fmt.Errorf("the input is larger than the %d MiB a simulated container takes", maxStdin>>20)
}

// execWriters are an exec's standard output and error as its client asked for them.
type execWriters struct {
	out, err io.Writer
	tty      bool
}

func newExecWriters(out, errOut io.WriteCloser, tty bool) execWriters {
	w := execWriters{tty: tty}
	if out != nil {
		w.out = out
	}
	if errOut != nil {
		w.err = errOut
	}
	if tty {
		w.err = w.out // a terminal has one output
	}
	return w
}

func (w execWriters) stdout(s string) { w.write(w.out, s) }
func (w execWriters) stderr(s string) { w.write(w.err, s) }

func (w execWriters) write(to io.Writer, s string) {
	if to == nil || s == "" {
		return
	}
	if w.tty {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	_, _ = io.WriteString(to, s)
}

// errInterrupt is ^C typed at a terminal: the line is dropped.
var errInterrupt = errors.New("interrupt")

// lineReader reads an exec's input a line at a time. Without a tty, lines end with
// "\n" (a last line without one is a line too). With a tty it is a terminal's line
// discipline: what is typed is echoed, Enter ("\r") ends a line, backspace erases a
// character, ^C drops the line (errInterrupt), ^D on an empty line is the end of input.
type lineReader struct {
	r      *bufio.Reader
	echo   io.Writer
	tty    bool
	lastCR bool // the last line ended with "\r": a "\n" right after it is the same Enter
}

func newLineReader(in io.Reader, echo io.Writer, tty bool) *lineReader {
	return &lineReader{r: bufio.NewReader(in), echo: echo, tty: tty}
}

func (l *lineReader) next() (string, error) {
	if !l.tty {
		line, err := l.r.ReadString('\n')
		if err != nil && line == "" {
			return "", io.EOF
		}
		return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
	}
	var line []rune
	for {
		c, _, err := l.r.ReadRune()
		if err != nil {
			return "", io.EOF
		}
		wasCR := l.lastCR
		l.lastCR = c == '\r'
		switch c {
		case '\n':
			if wasCR && len(line) == 0 {
				continue
			}
			l.say("\r\n")
			return string(line), nil
		case '\r':
			l.say("\r\n")
			return string(line), nil
		case 0x7f, '\b':
			if len(line) > 0 {
				line = line[:len(line)-1]
				l.say("\b \b")
			}
		case 0x03:
			l.say("^C\r\n")
			return "", errInterrupt
		case 0x04:
			if len(line) == 0 {
				return "", io.EOF
			}
		default:
			line = append(line, c)
			l.say(string(c))
		}
	}
}

func (l *lineReader) say(s string) {
	if l.echo != nil {
		_, _ = io.WriteString(l.echo, s)
	}
}
