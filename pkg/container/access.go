package container

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client is who sends an HTTP request to a container's server, as its access log
// records it.
type Client struct {
	Addr  string // the source address
	Agent string // the User-Agent; empty when the request sent none
}

// ProbeAgent is the User-Agent of the kubelet's HTTP probes.
const ProbeAgent = "kube-probe/1.36"

// localClient is a program inside the container (curl, wget) requesting its own server.
var localClient = Client{Addr: "127.0.0.1", Agent: "curl/8.5.0"}

// Header is one request header as sent (an httpGet probe's httpHeaders).
type Header struct {
	Name, Value string
}

// Get is an HTTP GET as a container's server sees it.
type Get struct {
	// Path is the request's path, cleaned and rooted ("/", "/healthz").
	Path string
	// Query is what followed "?", undecoded; empty when nothing did.
	Query string
	// Host is the request's Host header; empty when it is the address dialled.
	Host string
	// Agent is the request's User-Agent; empty when it sent none.
	Agent string
	// Headers are the headers the client was asked to send (a probe's httpHeaders),
	// in order; nil for none.
	Headers []Header
}

// Header is the first value of the request's header name (case-insensitive) as a
// server reads it: the User-Agent sent, Accept "*/*" unless the client set it, as
// the kubelet's probes and curl send it; "" for a header it has not.
func (g Get) Header(name string) string {
	if strings.EqualFold(name, "User-Agent") {
		return g.Agent
	}
	for _, h := range g.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	if strings.EqualFold(name, "Accept") {
		return "*/*"
	}
	return ""
}

// Param is the query parameter name's first value; "" when absent.
func (g Get) Param(name string) string {
	q, _ := url.ParseQuery(g.Query)
	return q.Get(name)
}

// AccessFormat appends to b a server's access-log line for one GET it answered.
// Formats append rather than return a string: a line is kept as its parts and
// formatted when read (see Instance.write), and only its length is needed at once.
type AccessFormat func(b []byte, at time.Time, c Client, path string, code, size int) []byte

// nginxAccess is nginx's default "combined" format with $http_x_forwarded_for, as the
// official image logs it: the common format, then referer, User-Agent ("-" for a
// request without one) and forwarded-for.
func nginxAccess(b []byte, at time.Time, c Client, path string, code, size int) []byte {
	b = httpdAccess(b, at, c, path, code, size)
	b = append(b, ` "-" `...)
	agent := c.Agent
	if agent == "" {
		agent = "-"
	}
	b = strconv.AppendQuote(b, agent)
	return append(b, ` "-"`...)
}

// httpdAccess is Apache's common log format, as the official httpd image logs it.
func httpdAccess(b []byte, at time.Time, c Client, path string, code, size int) []byte {
	b = append(b, c.Addr...)
	b = append(b, " - - ["...)
	b = at.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "GET `...)
	b = append(b, path...)
	b = append(b, ` HTTP/1.1" `...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, int64(size), 10)
}
