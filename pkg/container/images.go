package container

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/distribution/reference"
)

// Protocol is what a listening port speaks.
type Protocol int

const (
	// TCP accepts connections and speaks something other than HTTP (redis, postgres).
	TCP Protocol = iota
	// HTTP serves HTTP/1.1.
	HTTP
	// GRPC serves gRPC, with the standard health service.
	GRPC
)

// Listener is one port a server listens on.
type Listener struct {
	Port     int32
	Protocol Protocol
	// Serve answers an HTTP GET (HTTP only): the status code and the body. The request
	// (its cleaned path, query and headers), the container's files and how long it has
	// run are what it may look at.
	Serve func(fs *FS, g Get, uptime time.Duration) (int, string)
	// Talk is what a TCP server answers on a connection (talk.go); nil when it accepts
	// connections and answers nothing the model knows.
	Talk Talk
}

// Server is a long-running program of an image: the ports it listens on once started
// and the lines it writes to the log as it starts.
type Server struct {
	Name   string
	Listen []Listener
	Log    []string
	// Access, when set, is the line the server logs for each request it answers.
	Access AccessFormat
	// AnyPort: it answers on every port (HTTP 200 on every path, gRPC SERVING): the model
	// of an image kroll knows nothing about.
	AnyPort bool
}

// Image is the behaviour of one image repository: its default entrypoint and command,
// the files it ships, and the programs it provides.
type Image struct {
	Repository string
	Entrypoint []string
	Cmd        []string
	Files      map[string]string
	// programs: a program the image provides (beyond the shell builtins), by base name.
	programs map[string]func(args []string) result
	// Generic is the behaviour of a repository kroll has no model for.
	Generic bool
	// busybox: its tools are busybox's (their messages and statuses; its sh is ash),
	// not GNU's.
	busybox bool
}

// program runs a program the image provides.
func (img *Image) program(name string, args []string) (result, bool) {
	f, ok := img.programs[name]
	if !ok {
		return result{}, false
	}
	return f(args), true
}

// Argv is what a container of this image runs, with the Kubernetes rules: command
// replaces the entrypoint (and drops the image's cmd), args replace the cmd.
func (img *Image) Argv(command, args []string) []string {
	switch {
	case len(command) > 0:
		return append(append([]string{}, command...), args...)
	case len(args) > 0:
		return append(append([]string{}, img.Entrypoint...), args...)
	}
	return append(append([]string{}, img.Entrypoint...), img.Cmd...)
}

// Lookup is the behaviour of an image reference ("nginx:1.14.2",
// "registry.k8s.io/e2e-test-images/agnhost:2.53"); a repository without a model gets
// the generic behaviour.
func Lookup(image string) *Image {
	repo := image
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		repo = named.Name()
	}
	if img, ok := images[repo]; ok {
		return img
	}
	return &Image{Repository: repo, Generic: true}
}

var images = map[string]*Image{}

func register(img *Image, also ...string) {
	images[img.Repository] = img
	for _, r := range also {
		images[r] = img
	}
}

func serve(s *Server) func([]string) result {
	return func([]string) result { return result{forever: true, server: s} }
}

func tool(out string, code int) func([]string) result {
	return func([]string) result { return result{out: out, code: code} }
}

// staticFiles serves the files under root: a directory's index.html, 404 otherwise.
// The files a path names are remembered (the last path asked, per server): every probe
// of every nginx pod asks "/", and joining root, the path and index.html anew each
// time is garbage the whole cluster's heap pays for. What is there is still looked up
// on every request: an exec may have moved index.html away.
func staticFiles(root string) func(*FS, Get, time.Duration) (int, string) {
	type names struct{ path, file, index string }
	var last atomic.Pointer[names]
	return func(fs *FS, g Get, _ time.Duration) (int, string) {
		n := last.Load()
		if n == nil || n.path != g.Path {
			f := path.Join(root, g.Path)
			n = &names{path: g.Path, file: f, index: path.Join(f, "index.html")}
			last.Store(n)
		}
		f := n.file
		if fs.IsDir(f) {
			f = n.index
		}
		if c, ok := fs.Read(f); ok {
			return 200, c
		}
		return 404, "404 Not Found\n"
	}
}

// fileServer is Go's http.FileServer over root, as agnhost test-webserver runs it: a
// file's content, a directory's index.html or else its listing, 404 for anything absent.
func fileServer(root string) func(*FS, Get, time.Duration) (int, string) {
	return func(fs *FS, g Get, _ time.Duration) (int, string) {
		f := path.Join(root, g.Path)
		if c, ok := fs.Read(f); ok {
			return 200, c
		}
		if c, ok := fs.Read(path.Join(f, "index.html")); ok && fs.IsDir(f) {
			return 200, c
		}
		if names, ok := fs.List(f); ok {
			var b strings.Builder
			b.WriteString("<pre>\n")
			for _, n := range names {
				if fs.IsDir(path.Join(f, n)) {
					n += "/"
				}
				fmt.Fprintf(&b, "<a href=%q>%s</a>\n", n, n)
			}
			b.WriteString("</pre>\n")
			return 200, b.String()
		}
		return 404, "404 page not found\n"
	}
}

// agnhostCert and agnhostKey stand for the PEM files agnhost ships at its root; their
// bytes matter to no probe, only that they are there.
const (
	agnhostCert = "-----BEGIN CERTIFICATE-----\n(porter's test certificate for 127.0.0.1 and ::1)\n-----END CERTIFICATE-----\n"
	agnhostKey  = "-----BEGIN RSA PRIVATE KEY-----\n(porter's test key)\n-----END RSA PRIVATE KEY-----\n"
)

const nginxIndex = `<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>
</body>
</html>
`

func init() {
	nginx := &Server{Name: "nginx", Listen: []Listener{{Port: 80, Protocol: HTTP, Serve: staticFiles("/usr/share/nginx/html")}},
		Log:    []string{"/docker-entrypoint.sh: Configuration complete; ready for start up", "nginx: start worker processes"},
		Access: nginxAccess}
	register(&Image{
		Repository: "docker.io/library/nginx",
		Entrypoint: []string{"/docker-entrypoint.sh"}, Cmd: []string{"nginx", "-g", "daemon off;"},
		Files: map[string]string{
			"/usr/share/nginx/html/index.html": nginxIndex,
			"/usr/share/nginx/html/50x.html":   "<h1>An error occurred.</h1>\n",
			"/etc/nginx/nginx.conf":            "user nginx;\nworker_processes auto;\n",
		},
		programs: map[string]func([]string) result{"nginx": serve(nginx)},
	}, "registry.k8s.io/e2e-test-images/nginx", "docker.io/nginxinc/nginx-unprivileged")

	httpd := &Server{Name: "httpd", Listen: []Listener{{Port: 80, Protocol: HTTP, Serve: staticFiles("/usr/local/apache2/htdocs")}},
		Log:    []string{"AH00558: httpd: Could not reliably determine the server's fully qualified domain name", "[mpm_event:notice] AH00489: Apache/2.4 configured -- resuming normal operations"},
		Access: httpdAccess}
	register(&Image{
		Repository: "docker.io/library/httpd",
		Cmd:        []string{"httpd-foreground"},
		Files:      map[string]string{"/usr/local/apache2/htdocs/index.html": "<html><body><h1>It works!</h1></body></html>\n"},
		programs:   map[string]func([]string) result{"httpd-foreground": serve(httpd), "httpd": serve(httpd)},
	}, "registry.k8s.io/e2e-test-images/httpd")

	shells := map[string]func([]string) result{}
	register(&Image{Repository: "docker.io/library/busybox", Cmd: []string{"sh"}, programs: shells, busybox: true},
		"registry.k8s.io/e2e-test-images/busybox", "registry.k8s.io/busybox")
	register(&Image{Repository: "docker.io/library/alpine", Cmd: []string{"/bin/sh"}, Files: map[string]string{"/etc/alpine-release": "3.20.0\n"}, programs: shells, busybox: true})

	redis := &Server{Name: "redis", Listen: []Listener{{Port: 6379, Protocol: TCP, Talk: redisTalk}}, Log: []string{"* Ready to accept connections tcp"}}
	register(&Image{Repository: "docker.io/library/redis", Entrypoint: []string{"docker-entrypoint.sh"}, Cmd: []string{"redis-server"},
		programs: map[string]func([]string) result{"redis-server": serve(redis), "redis-cli": tool("PONG\n", 0)}})
	postgres := &Server{Name: "postgres", Listen: []Listener{{Port: 5432, Protocol: TCP, Talk: postgresTalk}}, Log: []string{"LOG:  database system is ready to accept connections"}}
	register(&Image{Repository: "docker.io/library/postgres", Entrypoint: []string{"docker-entrypoint.sh"}, Cmd: []string{"postgres"},
		programs: map[string]func([]string) result{"postgres": serve(postgres), "pg_isready": tool("/var/run/postgresql:5432 - accepting connections\n", 0)}})
	mysql := &Server{Name: "mysql", Listen: []Listener{{Port: 3306, Protocol: TCP}, {Port: 33060, Protocol: TCP}}, Log: []string{"[Server] /usr/sbin/mysqld: ready for connections. port: 3306"}}
	register(&Image{Repository: "docker.io/library/mysql", Entrypoint: []string{"docker-entrypoint.sh"}, Cmd: []string{"mysqld"},
		programs: map[string]func([]string) result{"mysqld": serve(mysql), "mysqladmin": tool("mysqld is alive\n", 0), "mysql": tool("", 0)}})

	pause := &Server{Name: "pause"}
	register(&Image{Repository: "registry.k8s.io/pause", Entrypoint: []string{"/pause"}, programs: map[string]func([]string) result{"pause": serve(pause)}},
		"k8s.gcr.io/pause", "gcr.io/google_containers/pause")

	// agnhost ships porter's certificate at the root, which its test-webserver serves
	// (upstream's StatefulSet specs probe /localhost.crt and move it away to fail).
	register(&Image{Repository: "registry.k8s.io/e2e-test-images/agnhost", Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
		Files:    map[string]string{"/localhost.crt": agnhostCert, "/localhost.key": agnhostKey},
		programs: map[string]func([]string) result{"agnhost": agnhost}})
}

// agnhost runs one of the modes of Kubernetes' test image.
func agnhost(args []string) result {
	if len(args) == 0 {
		return result{code: 1, errs: []string{"Error: agnhost requires a subcommand"}}
	}
	mode, flags := args[0], args[1:]
	switch mode {
	case "pause":
		return result{forever: true, server: &Server{Name: "agnhost pause", Log: []string{"Paused"}}}
	case "netexec":
		port := flagPort(flags, "http-port", 8080)
		return result{forever: true, server: &Server{Name: "agnhost netexec",
			Listen: []Listener{{Port: port, Protocol: HTTP, Serve: netexec}, {Port: flagPort(flags, "udp-port", 8081), Protocol: TCP}},
			Log:    []string{fmt.Sprintf("Started HTTP server on port %d", port)}}}
	case "serve-hostname":
		port := flagPort(flags, "port", 9376)
		return result{forever: true, server: &Server{Name: "agnhost serve-hostname",
			Listen: []Listener{{Port: port, Protocol: HTTP, Serve: hostnameOnly}},
			Log:    []string{fmt.Sprintf("Serving on port %d.", port)}}}
	case "liveness":
		return result{forever: true, server: &Server{Name: "agnhost liveness",
			Listen: []Listener{{Port: 8080, Protocol: HTTP, Serve: livenessHandler}}}}
	case "test-webserver":
		port := flagPort(flags, "port", 80)
		return result{forever: true, server: &Server{Name: "agnhost test-webserver",
			Listen: []Listener{{Port: port, Protocol: HTTP, Serve: fileServer("/")}}}}
	case "grpc-health-checking":
		return result{forever: true, server: &Server{Name: "agnhost grpc-health-checking",
			Listen: []Listener{{Port: flagPort(flags, "port", 5000), Protocol: GRPC}, {Port: flagPort(flags, "http-port", 8080), Protocol: HTTP, Serve: netexec}}}}
	}
	return result{forever: true, note: "agnhost " + mode + " is not modelled by the simulated node; it is taken as a process that runs until stopped"}
}

// flagPort reads --name=N or --name N from flags.
func flagPort(flags []string, name string, def int32) int32 {
	for i, f := range flags {
		v, ok := strings.CutPrefix(f, "--"+name+"=")
		if !ok && f == "--"+name && i+1 < len(flags) {
			v, ok = flags[i+1], true
		}
		if ok {
			if n, err := strconv.Atoi(v); err == nil {
				return int32(n)
			}
		}
	}
	return def
}

// netexec answers agnhost netexec's handlers; an unknown path is a 404.
func netexec(fs *FS, g Get, _ time.Duration) (int, string) {
	switch g.Path {
	case "/header":
		// The value of the request's header named by key (the Host header is the
		// request's host, not a header, to Go's server: it answers "").
		key := g.Param("key")
		if strings.EqualFold(key, "Host") {
			return 200, ""
		}
		return 200, g.Header(key)
	case "/echo":
		return 200, g.Param("msg")
	case "/", "/healthz", "/readyz", "/clientip", "/serverport", "/dial", "/shell", "/redirect", "/upload", "/exit", "/shutdown":
		return 200, "ok"
	case "/hostname", "/hostName":
		return hostnameOnly(fs, g, 0)
	}
	return 404, "404 page not found\n"
}

func hostnameOnly(fs *FS, _ Get, _ time.Duration) (int, string) {
	h, _ := fs.Read("/etc/hostname")
	return 200, strings.TrimSpace(h)
}

// livenessHandler is agnhost liveness: /healthz answers 200 for its first 10 seconds,
// then 500 for ever; other paths 404.
func livenessHandler(_ *FS, g Get, up time.Duration) (int, string) {
	if g.Path != "/healthz" {
		return 404, "404 page not found\n"
	}
	if up < 10*time.Second {
		return 200, "ok"
	}
	return 500, fmt.Sprintf("error: %v", up.Seconds())
}
