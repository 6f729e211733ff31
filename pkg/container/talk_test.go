package container

import (
	"testing"
	"time"
)

func TestRedisTalk(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		reply string
		used  int
		close bool
	}{
		{name: "redis-cli PING (RESP array)", in: "*1\r\n$4\r\nPING\r\n", reply: "+PONG\r\n", used: 14},
		{name: "inline PING, as from nc", in: "PING\r\n", reply: "+PONG\r\n", used: 6},
		{name: "ping is case-insensitive, ping with a message echoes it", in: "*2\r\n$4\r\nping\r\n$2\r\nhi\r\n", reply: "$2\r\nhi\r\n", used: 22},
		{name: "ECHO", in: "ECHO hello\n", reply: "$5\r\nhello\r\n", used: 11},
		{name: "two pipelined commands", in: "PING\r\nPING\r\n", reply: "+PONG\r\n+PONG\r\n", used: 12},
		{name: "half a command waits for the rest", in: "*1\r\n$4\r\nPI", reply: "", used: 0},
		{name: "a complete command then half of one", in: "PING\r\n*1\r\n$4", reply: "+PONG\r\n", used: 6},
		{name: "QUIT answers OK and closes", in: "QUIT\r\nPING\r\n", reply: "+OK\r\n", used: 12, close: true},
		{name: "a command that needs data says the model keeps none", in: "GET k\r\n",
			reply: "-ERR the simulated redis keeps no data: 'GET' is not modelled (PING, ECHO and QUIT are)\r\n", used: 7},
		{name: "a broken array is a protocol error and closes", in: "*1\r\nPING\r\n", reply: "-ERR Protocol error: expected '$', got 'P'\r\n", used: 10, close: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reply, used, closed := redisTalk([]byte(tc.in))
			if string(reply) != tc.reply || used != tc.used || closed != tc.close {
				t.Errorf("redisTalk(%q) = %q, %d, %v; want %q, %d, %v", tc.in, reply, used, closed, tc.reply, tc.used, tc.close)
			}
		})
	}
}

func TestPostgresTalk(t *testing.T) {
	ssl := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	if reply, used, _ := postgresTalk(ssl); string(reply) != "N" || used != 8 {
		t.Errorf("SSLRequest = %q, %d; want N, 8", reply, used)
	}
	if reply, used, _ := postgresTalk(ssl[:5]); reply != nil || used != 0 {
		t.Errorf("half an SSLRequest = %q, %d; want to wait", reply, used)
	}
}

func TestListening(t *testing.T) {
	redis := Start(Spec{Image: "redis:7"}, t0)
	l, ok := redis.Listening(t0.Add(time.Second), 6379)
	if !ok || l.Protocol != TCP || l.Talk == nil {
		t.Fatalf("redis on 6379 = %+v, %v; want a TCP listener that talks", l, ok)
	}
	if reply, _, _ := l.Talk([]byte("PING\r\n")); string(reply) != "+PONG\r\n" {
		t.Errorf("redis PING = %q", reply)
	}
	if _, ok := redis.Listening(t0, 6380); ok {
		t.Error("redis listens on 6380")
	}
	if l, ok := Start(Spec{Image: "mysql:8"}, t0).Listening(t0, 3306); !ok || l.Protocol != TCP {
		t.Errorf("mysql on 3306 = %+v, %v; want TCP accepted", l, ok)
	}
}
