package container

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Talk is what a non-HTTP server answers on a connection (a port-forwarded one): given
// what the client has sent and not yet been answered, the reply to the complete
// requests at its front, how many bytes those were, and whether the server then closes
// the connection. A partial request is left (used 0) until more arrives. A nil Talk
// accepts the connection and answers nothing.
type Talk func(in []byte) (reply []byte, used int, close bool)

// Listening is what listens on port now: ok false when nothing does (a connection is
// refused).
func (c *Instance) Listening(now time.Time, port int32) (Listener, bool) {
	l := c.listener(now, port)
	if l == nil {
		return Listener{}, false
	}
	return *l, true
}

// redisTalk answers the RESP protocol (arrays of bulk strings, as clients send, and
// inline commands, as telnet or nc send): PING, ECHO and QUIT as redis does; any other
// command is answered with an error saying the simulated redis keeps no data.
func redisTalk(in []byte) ([]byte, int, bool) {
	var out []byte
	used := 0
	for used < len(in) {
		args, n, bad := readRESP(in[used:])
		if bad != "" {
			return append(out, "-ERR Protocol error: "+bad+"\r\n"...), len(in), true
		}
		if n == 0 {
			break
		}
		used += n
		if len(args) == 0 {
			continue
		}
		reply, quit := redisCommand(args)
		out = append(out, reply...)
		if quit {
			return out, len(in), true
		}
	}
	return out, used, false
}

func redisCommand(args []string) ([]byte, bool) {
	name := strings.ToUpper(args[0])
	switch {
	case name == "PING" && len(args) == 1:
		return []byte("+PONG\r\n"), false
	case name == "PING" && len(args) == 2, name == "ECHO" && len(args) == 2:
		return bulk(args[1]), false
	case name == "PING" || name == "ECHO":
		return []byte(fmt.Sprintf("-ERR wrong number of arguments for '%s' command\r\n", strings.ToLower(name))), false
	case name == "QUIT":
		return []byte("+OK\r\n"), true
	}
	return []byte(fmt.Sprintf("-ERR the simulated redis keeps no data: '%s' is not modelled (PING, ECHO and QUIT are)\r\n", args[0])), false
}

func bulk(s string) []byte { return []byte("$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n") }

// readRESP reads one command at the front of in: its words and length; n 0 when it
// is not complete yet; bad when it is not RESP.
func readRESP(in []byte) (args []string, n int, bad string) {
	line, rest, ok := bytes.Cut(in, []byte("\n"))
	if !ok {
		return nil, 0, ""
	}
	head := strings.TrimSuffix(string(line), "\r")
	if !strings.HasPrefix(head, "*") {
		return strings.Fields(head), len(line) + 1, "" // an inline command
	}
	count, err := strconv.Atoi(head[1:])
	if err != nil || count > 1024*1024 {
		return nil, 0, "invalid multibulk length"
	}
	n = len(line) + 1
	for i := 0; i < count; i++ {
		l, after, ok := bytes.Cut(rest, []byte("\r\n"))
		if !ok {
			return nil, 0, ""
		}
		if !bytes.HasPrefix(l, []byte("$")) {
			return nil, 0, fmt.Sprintf("expected '$', got '%c'", firstByte(l))
		}
		size, err := strconv.Atoi(string(l[1:]))
		if err != nil || size < 0 || size > 512<<20 {
			return nil, 0, "invalid bulk length"
		}
		if len(after) < size+2 {
			return nil, 0, ""
		}
		args = append(args, string(after[:size]))
		n += len(l) + 2 + size + 2
		rest = after[size+2:]
	}
	return args, n, ""
}

func firstByte(b []byte) byte {
	if len(b) == 0 {
		return ' '
	}
	return b[0]
}

// postgresTalk answers a client's SSLRequest with "N" (no TLS: go on in plain text),
// as a postgres without ssl configured does; what follows is accepted and not
// answered (the simulated postgres has no databases to log into).
func postgresTalk(in []byte) ([]byte, int, bool) {
	if len(in) < 8 {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(in[:4])
	code := binary.BigEndian.Uint32(in[4:8])
	if size == 8 && (code == 80877103 || code == 80877104) { // SSLRequest, GSSENCRequest
		return []byte("N"), 8, false
	}
	return nil, len(in), false
}
