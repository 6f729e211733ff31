package container

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
)

// tar is what `kubectl cp` runs: `tar cf - PATH` to copy from a container (the archive
// on standard output) and `tar [--no-same-permissions --no-same-owner] -xmf - -C DIR`
// to copy into one (the archive on standard input). Both work on the instance's files,
// so a copied file lasts for the instance's life. Options: c, x, t; f FILE ("-" is
// standard input or output), C DIR, z (gzip; read archives are recognised by their
// magic too), v, m, p, o and the long forms; member names lose their leading "/", as
// both GNU's and busybox's tar do, saying so on standard error. Symbolic links, devices
// and owners are not modelled (the model has none).

// tarOpts is a tar command line read.
type tarOpts struct {
	mode  byte   // 'c' create, 'x' extract, 't' list
	file  string // the archive: "-" for standard input or output
	dir   string // -C: where to extract, or where create's paths are taken from
	gzip  bool
	paths []string
}

// parseTarArgs reads tar's arguments (bundled old-style "cf" first, -xmf, long
// options); the error is tar's message.
func parseTarArgs(args []string) (tarOpts, string) {
	var o tarOpts
	var want []*string // options whose value is the next argument, in order
	setMode := func(m byte) string {
		if o.mode != 0 && o.mode != m {
			return "tar: You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option"
		}
		o.mode = m
		return ""
	}
	for i, a := range args {
		if len(want) > 0 {
			*want[0] = a
			want = want[1:]
			continue
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			var msg string
			switch name {
			case "create":
				msg = setMode('c')
			case "extract", "get":
				msg = setMode('x')
			case "list":
				msg = setMode('t')
			case "file", "directory":
				dst := &o.file
				if name == "directory" {
					dst = &o.dir
				}
				if hasVal {
					*dst = val
				} else {
					want = append(want, dst)
				}
			case "gzip", "gunzip", "ungzip":
				o.gzip = true
			}
			if msg != "" {
				return o, msg
			}
		case (strings.HasPrefix(a, "-") && len(a) > 1) || (i == 0 && a != "" && strings.Trim(a, "cxtfCzvmpoh") == ""):
			for _, ch := range strings.TrimPrefix(a, "-") {
				var msg string
				switch ch {
				case 'c', 'x', 't':
					msg = setMode(byte(ch))
				case 'f':
					want = append(want, &o.file)
				case 'C':
					want = append(want, &o.dir)
				case 'z':
					o.gzip = true
				case 'v', 'm', 'p', 'o', 'h':
				default:
					msg = fmt.Sprintf("tar: invalid option -- '%c'", ch)
				}
				if msg != "" {
					return o, msg
				}
			}
		default:
			o.paths = append(o.paths, a)
		}
	}
	switch {
	case len(want) > 0:
		return o, "tar: option requires an argument"
	case o.mode == 0:
		return o, "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options"
	case o.file == "":
		o.file = "-"
	}
	return o, ""
}

func tarCmd(_ *process, sh shellEnv, args []string) result {
	o, msg := parseTarArgs(args)
	if msg != "" {
		return result{code: 2, errs: []string{msg}}
	}
	if o.mode == 'c' {
		return tarCreate(sh, o)
	}
	return tarExtract(sh, o)
}

// tarFailed is tar's status and closing line after an error it went on from: GNU's 2
// with its summary, busybox's 1.
func tarFailed(sh shellEnv, r result) result {
	if sh.image != nil && sh.image.busybox {
		r.code = 1
		return r
	}
	r.code = 2
	r.errs = append(r.errs, "tar: Exiting with failure status due to previous errors")
	return r
}

func tarCreate(sh shellEnv, o tarOpts) result {
	if len(o.paths) == 0 {
		return result{code: 2, errs: []string{"tar: Cowardly refusing to create an empty archive"}}
	}
	busybox := sh.image != nil && sh.image.busybox
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if o.gzip {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	var r result
	failed, warned := false, false
	for _, p := range o.paths {
		full := p
		if o.dir != "" && !strings.HasPrefix(p, "/") {
			full = path.Join(o.dir, p)
		}
		// GNU's tar strips the name before it looks for the file (its warning comes
		// first even for a missing one); busybox's only as it adds a file.
		name := strings.TrimLeft(path.Clean(p), "/")
		exists := sh.fs.Exists(full)
		if name != path.Clean(p) && !warned && (exists || !busybox) {
			warned = true
			if busybox {
				r.errs = append(r.errs, "tar: removing leading '/' from member names")
			} else {
				r.errs = append(r.errs, "tar: Removing leading `/' from member names")
			}
		}
		if !exists {
			failed = true
			if busybox {
				r.errs = append(r.errs, "tar: "+p+": No such file or directory")
			} else {
				r.errs = append(r.errs, "tar: "+p+": Cannot stat: No such file or directory")
			}
			continue
		}
		if name == "" {
			name = "."
		}
		root := clean(full)
		members := append([]string{root}, sh.fs.under(root)...)
		for _, m := range members {
			member := name + strings.TrimPrefix(m, root)
			hdr := &tar.Header{Name: member, ModTime: sh.now, Uname: "root", Gname: "root", Format: tar.FormatGNU}
			content, isFile := sh.fs.Read(m)
			if isFile {
				hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(content))
			} else {
				hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, strings.TrimSuffix(member, "/")+"/"
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return result{code: 2, errs: []string{"tar: " + err.Error()}}
			}
			_, _ = io.WriteString(tw, content)
		}
	}
	_ = tw.Close()
	if zw != nil {
		_ = zw.Close()
	}
	if o.file != "-" {
		sh.fs.Write(o.file, buf.String())
	} else {
		// Its warnings come as it starts, before the archive: `kubectl cp` shows them
		// (as its own output) only if they come before the archive's end.
		r.out, r.errsFirst = buf.String(), true
	}
	if failed {
		return tarFailed(sh, r)
	}
	return r
}

func tarExtract(sh shellEnv, o tarOpts) result {
	busybox := sh.image != nil && sh.image.busybox
	var data string
	if o.file == "-" {
		if sh.stdin != nil {
			data, *sh.stdin = *sh.stdin, ""
		}
	} else {
		var ok bool
		if data, ok = sh.fs.Read(o.file); !ok {
			if busybox {
				return result{code: 1, errs: []string{"tar: can't open '" + o.file + "': No such file or directory"}}
			}
			return result{code: 2, errs: []string{"tar: " + o.file + ": Cannot open: No such file or directory", "tar: Error is not recoverable: exiting now"}}
		}
	}
	dir := "/"
	if o.dir != "" {
		dir = o.dir
		if !sh.fs.IsDir(dir) {
			if busybox {
				return result{code: 1, errs: []string{"tar: can't change directory to '" + dir + "': No such file or directory"}}
			}
			return result{code: 2, errs: []string{"tar: " + dir + ": Cannot open: No such file or directory", "tar: Error is not recoverable: exiting now"}}
		}
	}
	var in io.Reader = strings.NewReader(data)
	if o.gzip || strings.HasPrefix(data, "\x1f\x8b") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return result{code: 2, errs: []string{"gzip: stdin: not in gzip format", "tar: Child returned status 1", "tar: Error is not recoverable: exiting now"}}
		}
		in = zr
	}
	tr := tar.NewReader(in)
	var r result
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if len(r.errs) > 0 {
				return tarFailed(sh, r)
			}
			return r
		}
		if err != nil {
			if busybox {
				return result{code: 1, out: r.out, errs: []string{"tar: short read"}}
			}
			r.errs = append(r.errs, "tar: This does not look like a tar archive")
			return tarFailed(sh, r)
		}
		name := strings.TrimLeft(path.Clean("/"+hdr.Name), "/")
		if !wanted(name, o.paths) {
			continue
		}
		if o.mode == 't' {
			if hdr.Typeflag == tar.TypeDir {
				name += "/"
			}
			r.out += name + "\n"
			continue
		}
		target := path.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if !sh.fs.Mkdir(target) {
				r.errs = append(r.errs, "tar: "+name+": Cannot mkdir: File exists")
			}
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			if !sh.fs.Write(target, string(b)) {
				r.errs = append(r.errs, "tar: "+name+": Cannot open: Is a directory")
			}
		}
	}
}

// wanted tells whether member name is among the paths a tar x or t names (all when
// none): the path itself or something under it.
func wanted(name string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		p = strings.Trim(path.Clean(p), "/")
		if name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}
