package dashboard

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"a browser's list", []string{"gzip, deflate, br, zstd"}, true},
		{"with a weight", []string{"br;q=1.0, gzip;q=0.8"}, true},
		{"refused by a zero weight", []string{"gzip;q=0"}, false},
		{"refused by a zero weight written long", []string{"deflate, gzip; q=0.000"}, false},
		{"in a second header", []string{"br", "GZIP"}, true},
		{"none", nil, false},
		{"identity only", []string{"identity"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := acceptsGzip(tc.values); got != tc.want {
				t.Errorf("acceptsGzip(%q) = %v, want %v", tc.values, got, tc.want)
			}
		})
	}
}

// Given a browser that accepts gzip, the list page and a static file come gzipped
// with the same content as for one that does not; an event stream does not.
func TestPagesGoGzippedToBrowsersThatAcceptIt(t *testing.T) {
	h := newHarness(t, nil, deployment("web", "front", 2, false))
	h.login()
	fetch := func(path, encoding string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, h.http.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Set by hand, the client's transport leaves the body as it comes.
		req.Header.Set("Accept-Encoding", encoding)
		resp, err := h.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if path == "/live/list" {
			resp.Body.Close()
			return resp, ""
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// A length, when given, is of the bytes sent: not the file's when gzipped.
		if n := resp.Header.Get("Content-Length"); n != "" && n != strconv.Itoa(len(raw)) {
			t.Errorf("%s (Accept-Encoding %s): Content-Length %s, %d bytes sent", path, encoding, n, len(raw))
		}
		if resp.Header.Get("Content-Encoding") != "gzip" {
			return resp, string(raw)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp, string(b)
	}
	for _, path := range []string{"/", "/static/vendor/htmx-2.0.11.min.js"} {
		zipped, got := fetch(path, "gzip, deflate, br")
		plain, want := fetch(path, "identity")
		if zipped.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s to a browser accepting gzip: Content-Encoding %q, want gzip", path, zipped.Header.Get("Content-Encoding"))
		}
		if plain.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s to a browser not accepting gzip: Content-Encoding %q, want none", path, plain.Header.Get("Content-Encoding"))
		}
		if got != want || len(want) < 1000 {
			t.Errorf("%s: gzipped, %d bytes after decompressing; plain %d bytes; want the same", path, len(got), len(want))
		}
		if zipped.Header.Get("Content-Type") != plain.Header.Get("Content-Type") {
			t.Errorf("%s: Content-Type %q gzipped, %q plain", path, zipped.Header.Get("Content-Type"), plain.Header.Get("Content-Type"))
		}
	}
	if resp, _ := fetch("/live/list", "gzip"); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("the list's stream to a browser accepting gzip: %s, Content-Encoding %q; want 200 and none: each event must reach the page as written",
			resp.Status, resp.Header.Get("Content-Encoding"))
	}
}
