package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeCommand is one shell command of README.md: a line of a ```sh block, or a
// `$ ` line of a ```console block, with its here-document if it has one.
type readmeCommand struct {
	line int // in README.md, 1-based
	text string
}

// parseReadmeCommands reads the commands of README's shell blocks in order. Comment
// lines and blank lines are not commands; a line ending in a backslash continues on
// the next; a line with a here-document (<<EOF) takes the lines up to its delimiter.
func parseReadmeCommands(readme string) []readmeCommand {
	var out []readmeCommand
	lines := strings.Split(readme, "\n")
	lang := "" // the open block's language; "" outside blocks, "-" for other blocks
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "```") {
			switch {
			case lang != "":
				lang = ""
			case line == "```sh" || line == "```bash":
				lang = "sh"
			case line == "```console":
				lang = "console"
			default:
				lang = "-"
			}
			continue
		}
		if lang == "" || lang == "-" {
			continue
		}
		text := strings.TrimSpace(line)
		if lang == "console" {
			if !strings.HasPrefix(text, "$ ") {
				continue // output
			}
			text = strings.TrimPrefix(text, "$ ")
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cmd := readmeCommand{line: i + 1, text: text}
		for strings.HasSuffix(cmd.text, `\`) && i+1 < len(lines) {
			i++
			cmd.text = strings.TrimSuffix(cmd.text, `\`) + "\n" + lines[i]
		}
		if delim, ok := hereDocDelimiter(cmd.text); ok {
			for i+1 < len(lines) {
				i++
				cmd.text += "\n" + lines[i]
				if strings.TrimSpace(lines[i]) == delim {
					break
				}
			}
		}
		out = append(out, cmd)
	}
	return out
}

// hereDocDelimiter is the delimiter of a here-document the command opens: EOF for
// `cat <<EOF`, `<<'EOF'` or `<<-EOF`.
func hereDocDelimiter(cmd string) (string, bool) {
	i := strings.Index(cmd, "<<")
	if i < 0 {
		return "", false
	}
	rest := strings.TrimLeft(cmd[i+2:], "-")
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", false
	}
	return strings.Trim(fields[0], `'"`), true
}

// readmeNotRun are the README commands the test does not run, each with why. Matched
// as a prefix of the command (after `go run ./cmd/kroll` became `kroll`); each must
// match some command, so a README change that drops one is noticed here. Every other
// command runs: a new block of the README is tested by default.
var readmeNotRun = []struct{ prefix, why string }{
	{"kroll up", "the test has started it already: one `kroll up` on free ports, with its data dir in ./.kroll, stands for every block"},
	{"go test ", "the test command itself: it would run this test again"},
	{"kroll controller-manager ", "runs until stopped, against another cluster (~/.kube/config)"},
	{"kroll bench ", "takes hours and starts some twenty clusters of its own"},
}

// readmeCommandTimeout bounds each command; rollouts in the README are 10 pods at most.
const readmeCommandTimeout = 3 * time.Minute

// Given a fresh `kroll up`, when a user runs every command of README.md's shell blocks
// in order, in one shell session (what one block exports, the next has), then each
// succeeds. `go run ./cmd/kroll` and `kroll` are this checkout's kroll command (the
// package's test binary running cmd/kroll's cli.Main, krollBinary); `kubectl` is the
// one the package drives.
func TestReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	commands := parseReadmeCommands(string(readme))
	if len(commands) < 20 {
		t.Fatalf("found %d commands in README.md's shell blocks; the parser lost some", len(commands))
	}

	bin := krollBinary(t)
	pathDir := t.TempDir()
	for name, target := range map[string]string{"kroll": bin, "kubectl": kubectlPath} {
		if err := os.Symlink(target, filepath.Join(pathDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The user's directory: the README's `kroll up` keeps its state in ./.kroll, and
	// its commands write files (web-v2.yaml, web.svg) here.
	work := t.TempDir()
	startUp(t, bin, "--data-dir", filepath.Join(work, ".kroll"), "--port", "0", "--etcd-unsafe-no-fsync")
	// As the README's reader starts: kroll and kubectl on PATH, no $KUBECONFIG but
	// what a block exports.
	env := append(withoutEnv(os.Environ(), "PATH", "KUBECONFIG"), "PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	skipped := map[string]bool{}
	var exports []string
	ran := 0
	for _, c := range commands {
		text := strings.ReplaceAll(c.text, "go run ./cmd/kroll", "kroll")
		if why := notRun(text); why != "" {
			skipped[why] = true
			t.Logf("README.md:%d: not run: %s (%s)", c.line, firstLineOf(text), why)
			continue
		}
		script := strings.Join(append(append([]string{"set -euo pipefail"}, exports...), text), "\n")
		out, err := runShell(work, env, script)
		t.Logf("README.md:%d: $ %s\n%s", c.line, text, out)
		if err != nil {
			t.Fatalf("README.md:%d: %s: %v\n%s", c.line, firstLineOf(text), err, out)
		}
		if strings.HasPrefix(text, "export ") {
			exports = append(exports, text)
		}
		ran++
	}
	for _, n := range readmeNotRun {
		if !skipped[n.why] {
			t.Errorf("no README command starts with %q any more; drop it from readmeNotRun", n.prefix)
		}
	}
	t.Logf("ran %d README commands, left out %d", ran, len(commands)-ran)
}

// notRun is why text is not run, or "".
func notRun(text string) string {
	for _, n := range readmeNotRun {
		if strings.HasPrefix(text, n.prefix) || text == strings.TrimSpace(n.prefix) {
			return n.why
		}
	}
	return ""
}

// runShell runs script with bash in dir and returns its combined output; the whole
// process group is killed if it outlives readmeCommandTimeout.
func runShell(dir string, env []string, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readmeCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("still running after %s", readmeCommandTimeout)
	}
	return out.String(), err
}

// withoutEnv is env without the variables names.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestParseReadmeCommands(t *testing.T) {
	t.Parallel()
	readme := strings.Join([]string{
		"Run it:", "", "```sh", "go run ./cmd/kroll up   # comment", "```", "",
		"```sh", "# a comment", "export A=$PWD/x", "", "kubectl create -f - <<EOF", "kind: X", "  name: y", "EOF",
		"kubectl get \\", "  pods", "#   output shown as a comment", "```",
		"```", "Created web", "```",
		"```console", "$ kubectl get nodes", "NAME STATUS", "$ kubectl rollout status deployment/web   # waits", "```",
	}, "\n")
	var got []string
	for _, c := range parseReadmeCommands(readme) {
		got = append(got, fmt.Sprintf("%d:%s", c.line, c.text))
	}
	want := []string{
		"4:go run ./cmd/kroll up   # comment",
		"9:export A=$PWD/x",
		"11:kubectl create -f - <<EOF\nkind: X\n  name: y\nEOF",
		"15:kubectl get \n  pods",
		"23:kubectl get nodes",
		"25:kubectl rollout status deployment/web   # waits",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("parsed\n%q\nwant\n%q", got, want)
	}
}
