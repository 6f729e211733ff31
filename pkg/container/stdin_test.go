package container

import (
	"strings"
	"testing"
	"time"
)

func TestReadsStdin(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		want bool
	}{
		{"cat with no file reads its input", []string{"cat"}, true},
		{"cat - reads its input", []string{"cat", "-"}, true},
		{"cat of a file does not", []string{"cat", "/etc/hostname"}, false},
		{"sh -c 'cat > /tmp/f' reads it through the redirected cat", []string{"sh", "-c", "cat > /tmp/f"}, true},
		{"sh -c 'X=1 cat' reads it after an assignment", []string{"sh", "-c", "X=1 cat"}, true},
		{"sh -c 'echo hi; exit 3' does not", []string{"sh", "-c", "echo hi; exit 3"}, false},
		{"kubectl cp into a pod: tar -xmf - -C /tmp", []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-", "-C", "/tmp"}, true},
		{"kubectl cp out of a pod: tar cf - /tmp/f writes, reads nothing", []string{"tar", "cf", "-", "/tmp/f"}, false},
		{"tar xf of a file in the container does not", []string{"tar", "xf", "/tmp/a.tar"}, false},
		{"sh alone reads its commands", []string{"sh"}, true},
		{"bash -l reads its commands", []string{"/bin/bash", "-l"}, true},
		{"ls does not", []string{"ls", "/"}, false},
		{"nothing does not", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadsStdin(tc.argv); got != tc.want {
				t.Errorf("ReadsStdin(%q) = %v, want %v", tc.argv, got, tc.want)
			}
		})
	}
}

func TestReadsCommands(t *testing.T) {
	for argv, want := range map[string]bool{
		"sh": true, "/bin/sh -i": true, "bash -l": true, "ash": true,
		"sh -c true": false, "sh /script.sh": false, "cat": false, "sh -ec x": false,
	} {
		if got := ReadsCommands(strings.Fields(argv)); got != want {
			t.Errorf("ReadsCommands(%q) = %v, want %v", argv, got, want)
		}
	}
}

func TestExecInput(t *testing.T) {
	c := Start(Spec{Image: "nginx:1.25", Hostname: "web"}, t0)
	in := "line one\nline two\n"
	r := c.ExecInput(t0, []string{"sh", "-c", "cat > /tmp/f"}, nil, &in)
	if r.ExitCode != 0 || r.Output != "" {
		t.Fatalf("cat > /tmp/f = %+v", r)
	}
	if got := c.Exec(t0, []string{"cat", "/tmp/f"}, nil); got.Stdout != "line one\nline two\n" {
		t.Errorf("the file cat wrote from its input = %q", got.Stdout)
	}
	in = "echoed"
	if got := c.ExecInput(t0, []string{"cat"}, nil, &in); got.Stdout != "echoed" {
		t.Errorf("cat of its input = %q, want echoed", got.Stdout)
	}
	if got := c.Exec(t0, []string{"cat"}, nil); got.Stdout != "" || got.ExitCode != 0 {
		t.Errorf("cat without input (as /dev/null) = %+v, want nothing and 0", got)
	}
	if got := c.Exec(t0, []string{"sh", "-c", "echo out; cat /nope"}, nil); got.Stdout != "out\n" || got.Stderr != "cat: can't open '/nope': No such file or directory\n" || got.ExitCode != 1 {
		t.Errorf("stdout and stderr kept apart = %+v", got)
	}
}

func TestInteractiveShell(t *testing.T) {
	cases := []struct {
		name   string
		image  string
		argv   []string
		tty    bool
		lines  []string
		prompt string
		out    string // all lines' standard output and error
		exited bool
		code   int
	}{
		{name: "busybox sh -it: ash's prompt, variables last between lines, exit 3 ends it", image: "busybox", argv: []string{"sh"}, tty: true,
			lines: []string{"X=hello", "echo $X", "exit 3", "echo never"}, prompt: "/ # ", out: "hello\n", exited: true, code: 3},
		{name: "nginx sh -i without a tty: dash prints no prompt; $? of the last line", image: "nginx", argv: []string{"sh"},
			lines: []string{"false", "echo $?"}, out: "1\n"},
		{name: "bash -it prompts with user, host and directory", image: "nginx", argv: []string{"bash"}, tty: true,
			lines: []string{"hostname"}, prompt: "root@web:/# ", out: "web\n"},
		{name: "a line outside the subset is a syntax error and the shell goes on", image: "busybox", argv: []string{"sh"},
			lines: []string{"if true; then echo x; fi", "echo after"}, out: "sh: not understood: the shell keyword if\nafter\n"},
		{name: "exit with no number ends with the last status", image: "busybox", argv: []string{"sh"},
			lines: []string{"false", "exit"}, exited: true, code: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(Spec{Image: tc.image, Hostname: "web"}, t0)
			s := c.Shell(tc.argv, nil, tc.tty)
			if s.Prompt() != tc.prompt {
				t.Errorf("prompt = %q, want %q", s.Prompt(), tc.prompt)
			}
			var out string
			var last LineResult
			for _, l := range tc.lines {
				last = s.Line(t0, l)
				out += last.Stdout + last.Stderr
				if last.Exited {
					break
				}
			}
			if out != tc.out || last.Exited != tc.exited || (tc.exited && last.Code != tc.code) {
				t.Errorf("output %q exited %v code %d; want %q %v %d", out, last.Exited, last.Code, tc.out, tc.exited, tc.code)
			}
		})
	}
}

func TestMainShellReadsStdin(t *testing.T) {
	logText := func(c *Instance) string {
		var b strings.Builder
		for _, l := range c.Log() {
			b.WriteString(l.Text + "\n")
		}
		return b.String()
	}
	t.Run("busybox sh with stdin runs until its input ends, then ends with its last status", func(t *testing.T) {
		c := Start(Spec{Image: "busybox", Stdin: true}, t0)
		if _, _, ended := c.Exited(); ended || !c.ReadsInput() {
			t.Fatalf("sh with stdin open ended at once")
		}
		c.Input(t0.Add(time.Second), "echo from-attach")
		c.Input(t0.Add(time.Second), "false")
		c.AdvanceTo(t0.Add(time.Hour))
		if _, _, ended := c.Exited(); ended {
			t.Fatal("sh ended while its input is open")
		}
		c.CloseStdin(t0.Add(2 * time.Hour))
		code, at, ended := c.Exited()
		if !ended || code != 1 || !at.Equal(t0.Add(2*time.Hour)) || logText(c) != "from-attach\n" {
			t.Errorf("after the end of input: exited (%d, %v, %v), log %q; want 1 at 2h, from-attach", code, at.Sub(t0), ended, logText(c))
		}
	})
	t.Run("with a tty the log shows the prompt and each line; exit 4 ends it", func(t *testing.T) {
		c := Start(Spec{Image: "busybox", Stdin: true, TTY: true}, t0)
		c.Input(t0, "echo hi")
		c.Input(t0, "exit 4")
		code, _, ended := c.Exited()
		if !ended || code != 4 || logText(c) != "/ # echo hi\nhi\n/ # exit 4\n" {
			t.Errorf("exited (%d, %v), log %q", code, ended, logText(c))
		}
		if c.Input(t0, "echo late") {
			t.Error("an ended shell took input")
		}
	})
	t.Run("a line sent while a sleep runs waits for it", func(t *testing.T) {
		c := Start(Spec{Image: "busybox", Stdin: true}, t0)
		c.Input(t0, "sleep 5; echo slept")
		c.Input(t0.Add(time.Second), "echo next")
		if logText(c) != "" {
			t.Fatalf("log before the sleep ended = %q", logText(c))
		}
		c.AdvanceTo(t0.Add(6 * time.Second))
		if logText(c) != "slept\nnext\n" {
			t.Errorf("log = %q, want slept then next", logText(c))
		}
	})
	t.Run("without stdin, sh ends at once as before", func(t *testing.T) {
		c := Start(Spec{Image: "busybox"}, t0)
		if _, _, ended := c.Exited(); !ended || c.ReadsInput() {
			t.Error("sh without stdin did not end")
		}
	})
}
