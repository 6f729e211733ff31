package container

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

type builtin func(p *process, sh shellEnv, args []string) result

// builtins are the commands every simulated container has, with busybox's messages.
var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		"true":     func(*process, shellEnv, []string) result { return result{} },
		":":        func(*process, shellEnv, []string) result { return result{} },
		"false":    func(*process, shellEnv, []string) result { return result{code: 1} },
		"exit":     exitCmd,
		"sleep":    sleepCmd,
		"echo":     echoCmd,
		"cat":      catCmd,
		"ls":       lsCmd,
		"mv":       mvCmd,
		"cp":       cpCmd,
		"rm":       rmCmd,
		"touch":    touchCmd,
		"mkdir":    mkdirCmd,
		"test":     func(_ *process, sh shellEnv, a []string) result { return testCmd(sh, a) },
		"[":        bracketCmd,
		"env":      envCmd,
		"printenv": envCmd,
		"hostname": func(p *process, _ shellEnv, _ []string) result { return result{out: p.env["HOSTNAME"] + "\n"} },
		"export":   exportCmd,
		"tail":     tailCmd,
		"curl":     curlCmd,
		"wget":     wgetCmd,
		"tar":      tarCmd,
	}
}

func exitCmd(p *process, _ shellEnv, a []string) result {
	code := p.last
	if len(a) > 0 {
		n, err := strconv.Atoi(a[0])
		if err != nil {
			return result{exit: true, code: 2, errs: []string{"sh: exit: Illegal number: " + a[0]}}
		}
		code = n & 0xff
	}
	return result{exit: true, code: code}
}

// sleepCmd sleeps for the sum of its arguments (busybox accepts 1.5, 2m, 1h, infinity).
func sleepCmd(_ *process, _ shellEnv, a []string) result {
	if len(a) == 0 {
		return result{code: 1, errs: []string{"sleep: missing operand"}}
	}
	var total time.Duration
	for _, s := range a {
		if s == "infinity" || s == "inf" {
			return result{forever: true, note: "sleep infinity"}
		}
		unit := time.Second
		switch {
		case strings.HasSuffix(s, "s"):
			s = strings.TrimSuffix(s, "s")
		case strings.HasSuffix(s, "m"):
			s, unit = strings.TrimSuffix(s, "m"), time.Minute
		case strings.HasSuffix(s, "h"):
			s, unit = strings.TrimSuffix(s, "h"), time.Hour
		case strings.HasSuffix(s, "d"):
			s, unit = strings.TrimSuffix(s, "d"), 24*time.Hour
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return result{code: 1, errs: []string{"sleep: invalid number '" + s + "'"}}
		}
		if f*float64(unit) >= float64(Forever/2) {
			return result{forever: true, note: "sleep " + s}
		}
		total += time.Duration(f * float64(unit))
	}
	if total == 0 {
		return result{}
	}
	return result{sleep: total}
}

func echoCmd(_ *process, _ shellEnv, a []string) result {
	nl := "\n"
	if len(a) > 0 && a[0] == "-n" {
		a, nl = a[1:], ""
	}
	if len(a) > 0 && a[0] == "-e" {
		a = a[1:]
	}
	return result{out: strings.Join(a, " ") + nl}
}

// catCmd prints its files; no file, or "-", is its standard input (read to its end).
func catCmd(_ *process, sh shellEnv, a []string) result {
	var r result
	files := operands(a)
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		if f == "-" {
			if sh.stdin != nil {
				r.out += *sh.stdin
				*sh.stdin = ""
			}
			continue
		}
		if c, ok := sh.fs.Read(f); ok {
			r.out += c
			continue
		}
		r.code = 1
		if sh.fs.IsDir(f) {
			r.errs = append(r.errs, "cat: read error: Is a directory")
		} else {
			r.errs = append(r.errs, "cat: can't open '"+f+"': No such file or directory")
		}
	}
	return r
}

func lsCmd(_ *process, sh shellEnv, a []string) result {
	a = operands(a)
	if len(a) == 0 {
		a = []string{"/"}
	}
	var r result
	for _, d := range a {
		if names, ok := sh.fs.List(d); ok {
			for _, n := range names {
				r.out += n + "\n"
			}
		} else if sh.fs.Exists(d) {
			r.out += d + "\n"
		} else {
			r.code = 1
			r.errs = append(r.errs, "ls: "+d+": No such file or directory")
		}
	}
	return r
}

func mvCmd(_ *process, sh shellEnv, a []string) result {
	a = operands(a)
	if len(a) != 2 {
		return result{code: 1, errs: []string{"BusyBox: mv: need two operands"}}
	}
	if !sh.fs.Move(a[0], a[1]) {
		return result{code: 1, errs: []string{"mv: can't rename '" + a[0] + "': No such file or directory"}}
	}
	return result{}
}

func cpCmd(_ *process, sh shellEnv, a []string) result {
	a = operands(a)
	if len(a) != 2 {
		return result{code: 1, errs: []string{"BusyBox: cp: need two operands"}}
	}
	if !sh.fs.Copy(a[0], a[1]) {
		return result{code: 1, errs: []string{"cp: can't stat '" + a[0] + "': No such file or directory"}}
	}
	return result{}
}

func rmCmd(_ *process, sh shellEnv, a []string) result {
	force, recursive := false, false
	for _, f := range flags(a) {
		force = force || strings.ContainsRune(f, 'f')
		recursive = recursive || strings.ContainsAny(f, "rR")
	}
	var r result
	for _, f := range operands(a) {
		if sh.fs.Remove(f, recursive) || force {
			continue
		}
		r.code = 1
		if sh.fs.IsDir(f) {
			r.errs = append(r.errs, "rm: '"+f+"' is a directory")
		} else {
			r.errs = append(r.errs, "rm: can't remove '"+f+"': No such file or directory")
		}
	}
	return r
}

func touchCmd(_ *process, sh shellEnv, a []string) result {
	var r result
	for _, f := range operands(a) {
		if sh.fs.Exists(f) {
			continue
		}
		if !sh.fs.Write(f, "") {
			r.code = 1
			r.errs = append(r.errs, "touch: "+f+": No such file or directory")
		}
	}
	return r
}

func mkdirCmd(_ *process, sh shellEnv, a []string) result {
	parents := false
	for _, f := range flags(a) {
		parents = parents || strings.ContainsRune(f, 'p')
	}
	var r result
	for _, d := range operands(a) {
		if sh.fs.IsDir(d) {
			if !parents {
				r.code = 1
				r.errs = append(r.errs, "mkdir: can't create directory '"+d+"': File exists")
			}
			continue
		}
		if !sh.fs.Mkdir(d) {
			r.code = 1
			r.errs = append(r.errs, "mkdir: can't create directory '"+d+"': File exists")
		}
	}
	return r
}

func bracketCmd(_ *process, sh shellEnv, a []string) result {
	if len(a) == 0 || a[len(a)-1] != "]" {
		return result{code: 2, errs: []string{"sh: missing ]"}}
	}
	return testCmd(sh, a[:len(a)-1])
}

// testCmd evaluates test's unary file and string tests, string and integer
// comparisons, and a leading `!`. Exit 0 true, 1 false, 2 an expression it cannot read.
func testCmd(sh shellEnv, a []string) result {
	neg := false
	if len(a) > 0 && a[0] == "!" {
		neg, a = true, a[1:]
	}
	ok, valid := evalTest(sh, a)
	if !valid {
		return result{code: 2, errs: []string{"sh: test: syntax error"}}
	}
	if ok != neg {
		return result{}
	}
	return result{code: 1}
}

func evalTest(sh shellEnv, a []string) (bool, bool) {
	switch len(a) {
	case 0:
		return false, true
	case 1:
		return a[0] != "", true
	case 2:
		switch a[0] {
		case "-f", "-r", "-w", "-x":
			_, ok := sh.fs.Read(a[1])
			return ok, true
		case "-s":
			c, ok := sh.fs.Read(a[1])
			return ok && c != "", true
		case "-d":
			return sh.fs.IsDir(a[1]), true
		case "-e":
			return sh.fs.Exists(a[1]), true
		case "-z":
			return a[1] == "", true
		case "-n":
			return a[1] != "", true
		}
	case 3:
		switch a[1] {
		case "=", "==":
			return a[0] == a[2], true
		case "!=":
			return a[0] != a[2], true
		}
		x, err1 := strconv.Atoi(a[0])
		y, err2 := strconv.Atoi(a[2])
		if err1 != nil || err2 != nil {
			return false, false
		}
		switch a[1] {
		case "-eq":
			return x == y, true
		case "-ne":
			return x != y, true
		case "-lt":
			return x < y, true
		case "-le":
			return x <= y, true
		case "-gt":
			return x > y, true
		case "-ge":
			return x >= y, true
		}
	}
	return false, false
}

func envCmd(p *process, _ shellEnv, a []string) result {
	if len(a) > 0 {
		v, ok := p.env[a[0]]
		if !ok {
			return result{code: 1}
		}
		return result{out: v + "\n"}
	}
	keys := make([]string, 0, len(p.env))
	for k := range p.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + p.env[k] + "\n")
	}
	return result{out: b.String()}
}

func exportCmd(p *process, _ shellEnv, a []string) result {
	for _, kv := range a {
		if k, v, ok := strings.Cut(kv, "="); ok && isName(k) {
			p.env[k] = v
		}
	}
	return result{}
}

// tailCmd knows the idiom `tail -f /dev/null` (wait forever) and prints the last lines
// of a file otherwise.
func tailCmd(_ *process, sh shellEnv, a []string) result {
	for _, f := range flags(a) {
		if strings.ContainsAny(f, "fF") {
			return result{forever: true, note: "tail -f"}
		}
	}
	var r result
	for _, f := range operands(a) {
		c, ok := sh.fs.Read(f)
		if !ok {
			r.code = 1
			r.errs = append(r.errs, "tail: can't open '"+f+"': No such file or directory")
			continue
		}
		lines := strings.Split(strings.TrimSuffix(c, "\n"), "\n")
		if len(lines) > 10 {
			lines = lines[len(lines)-10:]
		}
		r.out += strings.Join(lines, "\n") + "\n"
	}
	return r
}

func flags(a []string) []string {
	var out []string
	for _, s := range a {
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			out = append(out, s)
		}
	}
	return out
}

func operands(a []string) []string {
	var out []string
	for _, s := range a {
		if !strings.HasPrefix(s, "-") || s == "-" {
			out = append(out, s)
		}
	}
	return out
}

// localURL splits an http URL on the container itself (localhost, 127.0.0.1 or no
// host) into port and path; ok false for any other.
func localURL(raw string) (port int32, path, host string, ok bool) {
	rest, found := strings.CutPrefix(raw, "http://")
	if !found && strings.Contains(raw, "://") {
		return 0, "", "", false
	}
	hostPort, path, _ := strings.Cut(rest, "/")
	path = "/" + path
	host, p, hasPort := strings.Cut(hostPort, ":")
	port = 80
	if hasPort {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, "", "", false
		}
		port = int32(n)
	}
	return port, path, host, host == "localhost" || host == "127.0.0.1" || host == ""
}

// curlCmd is curl of the container's own HTTP server: -f fails on an error status
// (exit 22), -o writes the body to a file, -s/-S/-L are accepted. A host other than
// the container itself cannot be resolved (exit 6).
func curlCmd(_ *process, sh shellEnv, a []string) result {
	var url, outFile string
	fail := false
	for i := 0; i < len(a); i++ {
		switch f := a[i]; {
		case f == "-o" || f == "--output":
			if i+1 < len(a) {
				i++
				outFile = a[i]
			}
		case strings.HasPrefix(f, "--fail") || (strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.ContainsRune(f, 'f')):
			fail = true
		case !strings.HasPrefix(f, "-"):
			url = f
		}
	}
	port, path, host, ok := localURL(url)
	if !ok || sh.get == nil {
		return result{code: 6, errs: []string{"curl: (6) Could not resolve host: " + host}}
	}
	code, body, err := sh.get(port, path)
	if err != nil {
		return result{code: 7, errs: []string{fmt.Sprintf("curl: (7) Failed to connect to %s port %d after 0 ms: Couldn't connect to server", host, port)}}
	}
	if fail && code >= 400 {
		return result{code: 22, errs: []string{fmt.Sprintf("curl: (22) The requested URL returned error: %d", code)}}
	}
	if outFile != "" && outFile != "/dev/null" {
		sh.fs.Write(outFile, body)
		return result{}
	}
	if outFile == "/dev/null" {
		return result{}
	}
	return result{out: body}
}

// wgetCmd is busybox wget of the container's own HTTP server: -O- prints the body,
// -O file writes it, --spider only checks; an error status fails with exit 1.
func wgetCmd(_ *process, sh shellEnv, a []string) result {
	var url, outFile string
	spider := false
	for i := 0; i < len(a); i++ {
		switch f := a[i]; {
		case f == "-O" && i+1 < len(a):
			i++
			outFile = a[i]
		case strings.HasPrefix(f, "-O"):
			outFile = strings.TrimPrefix(f, "-O")
		case f == "--spider":
			spider = true
		case !strings.HasPrefix(f, "-"):
			url = f
		}
	}
	port, path, host, ok := localURL(url)
	if !ok || sh.get == nil {
		return result{code: 1, errs: []string{"wget: bad address '" + host + "'"}}
	}
	code, body, err := sh.get(port, path)
	switch {
	case err != nil:
		return result{code: 1, errs: []string{"wget: can't connect to remote host (127.0.0.1): Connection refused"}}
	case code >= 400:
		return result{code: 1, errs: []string{fmt.Sprintf("wget: server returned error: HTTP/1.1 %d %s", code, http.StatusText(code))}}
	case spider:
		return result{}
	case outFile == "-":
		return result{out: body}
	case outFile == "":
		outFile = "index.html"
		if base := path[strings.LastIndexByte(path, '/')+1:]; base != "" {
			outFile = base
		}
	}
	sh.fs.Write(outFile, body)
	return result{}
}
