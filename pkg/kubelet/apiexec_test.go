package kubelet

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kroll-dev/kroll/pkg/container"
)

func TestLineReader(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		tty   bool
		lines []string // then io.EOF; "^C" stands for errInterrupt
		echo  string
	}{
		{name: "without a tty: lines end with \\n, a last one without it counts", in: "echo a\necho b", lines: []string{"echo a", "echo b"}},
		{name: "without a tty nothing is echoed, \\r\\n is one end", in: "ls\r\n", lines: []string{"ls"}},
		{name: "a tty echoes what is typed; Enter is \\r", in: "ls\r", tty: true, lines: []string{"ls"}, echo: "ls\r\n"},
		{name: "a tty's \\r\\n is one Enter, not an empty line after", in: "ls\r\npwd\r\n", tty: true, lines: []string{"ls", "pwd"}, echo: "ls\r\npwd\r\n"},
		{name: "backspace erases", in: "lx\x7fs\r", tty: true, lines: []string{"ls"}, echo: "lx\b \bs\r\n"},
		{name: "^C drops the line", in: "sleep 9\x03exit 3\r", tty: true, lines: []string{"^C", "exit 3"}, echo: "sleep 9^C\r\nexit 3\r\n"},
		{name: "^D on an empty line ends the input", in: "true\r\x04echo never\r", tty: true, lines: []string{"true"}, echo: "true\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var echo bytes.Buffer
			lr := newLineReader(strings.NewReader(tc.in), &echo, tc.tty)
			var got []string
			for i := 0; i < 10; i++ {
				l, err := lr.next()
				if errors.Is(err, errInterrupt) {
					got = append(got, "^C")
					continue
				}
				if err == io.EOF {
					break
				}
				got = append(got, l)
			}
			if strings.Join(got, "|") != strings.Join(tc.lines, "|") || echo.String() != tc.echo {
				t.Errorf("lines %q echo %q; want %q %q", got, echo.String(), tc.lines, tc.echo)
			}
		})
	}
}

// conn is a client's side of a forwarded connection: what it sent, what it got.
type conn struct {
	in  *strings.Reader
	out bytes.Buffer
}

func (c *conn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *conn) Write(p []byte) (int, error) { return c.out.Write(p) }

func TestForwardTCP(t *testing.T) {
	redis := container.Start(container.Spec{Image: "redis"}, t0)
	l, ok := redis.Listening(t0, 6379)
	if !ok {
		t.Fatal("redis does not listen on 6379")
	}
	c := &conn{in: strings.NewReader("*1\r\n$4\r\nPING\r\nECHO x\r\n")}
	forwardTCP(c, l.Talk)
	if c.out.String() != "+PONG\r\n$1\r\nx\r\n" {
		t.Errorf("redis through the forward = %q, want +PONG and x", c.out.String())
	}
	c = &conn{in: strings.NewReader("anything")}
	forwardTCP(c, nil)
	if c.out.Len() != 0 {
		t.Errorf("a server that answers nothing answered %q", c.out.String())
	}
}
