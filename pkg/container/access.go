package container

import (
	"fmt"
	"strconv"
	"time"
)

// Client is who sends an HTTP request to a container's server, as its access log
// records it.
type Client struct {
	Addr  string // the source address
	Agent string // the User-Agent
}

// ProbeAgent is the User-Agent of the kubelet's HTTP probes.
const ProbeAgent = "kube-probe/1.36"

// localClient is a program inside the container (curl, wget) requesting its own server.
var localClient = Client{Addr: "127.0.0.1", Agent: "curl/8.5.0"}

// AccessFormat is a server's access-log line for one GET it answered.
type AccessFormat func(at time.Time, c Client, path string, code, size int) string

// nginxAccess is nginx's default "combined" format with $http_x_forwarded_for, as the
// official image logs it.
// Built by appending into one buffer rather than with fmt: every HTTP probe of every
// nginx pod logs one such line.
func nginxAccess(at time.Time, c Client, path string, code, size int) string {
	b := make([]byte, 0, 96+len(c.Addr)+len(path)+len(c.Agent))
	b = append(b, c.Addr...)
	b = append(b, " - - ["...)
	b = at.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "GET `...)
	b = append(b, path...)
	b = append(b, ` HTTP/1.1" `...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, ` "-" `...)
	b = strconv.AppendQuote(b, c.Agent)
	b = append(b, ` "-"`...)
	return string(b)
}

// httpdAccess is Apache's common log format, as the official httpd image logs it.
func httpdAccess(at time.Time, c Client, path string, code, size int) string {
	return fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d %d`, c.Addr, at.UTC().Format("02/Jan/2006:15:04:05 -0700"), path, code, size)
}
