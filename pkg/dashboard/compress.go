package dashboard

import (
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// Pages and static files go gzipped to a browser that accepts it: the list of 1,000
// Deployments is some 210 KB of HTML and 15 KB gzipped, htmx 52 KB and 17 KB. The
// fastest level: the list compresses in a millisecond or two, and a writer's tables
// (some 300 KB) are pooled, not made for each request. Event streams are not
// compressed: each event must reach the page as it is written.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// compressible: r's response may be gzipped.
func compressible(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/live/") && r.Method == http.MethodGet && r.Header.Get("Range") == "" &&
		acceptsGzip(r.Header.Values("Accept-Encoding"))
}

// acceptsGzip reads Accept-Encoding: "gzip, deflate, br" yes, "gzip;q=0" no.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") {
				q := strings.ReplaceAll(params, " ", "")
				return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
			}
		}
	}
	return false
}

// gzipWriter gzips a response whose status is 200; any other (an error, a redirect)
// goes as it is.
type gzipWriter struct {
	http.ResponseWriter
	zw      *gzip.Writer
	started bool
}

func (g *gzipWriter) WriteHeader(code int) {
	if g.started {
		return
	}
	g.started = true
	h := g.Header()
	if code == http.StatusOK && h.Get("Content-Encoding") == "" {
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		g.zw = gzipWriters.Get().(*gzip.Writer)
		g.zw.Reset(g.ResponseWriter)
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	if !g.started {
		// As net/http would, before the bytes it sniffs are gzip's.
		if g.Header().Get("Content-Type") == "" {
			g.Header().Set("Content-Type", http.DetectContentType(b))
		}
		g.WriteHeader(http.StatusOK)
	}
	if g.zw != nil {
		return g.zw.Write(b)
	}
	return g.ResponseWriter.Write(b)
}

// close ends the gzip stream, if one was started.
func (g *gzipWriter) close() {
	if g.zw != nil {
		_ = g.zw.Close()
		g.zw.Reset(nil)
		gzipWriters.Put(g.zw)
		g.zw = nil
	}
}
