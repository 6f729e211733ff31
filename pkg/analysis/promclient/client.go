// Package promclient asks a Prometheus server one instant query through its HTTP
// API (POST /api/v1/query, form-encoded, GET when the server or a proxy in front
// refuses POST) and reads the answer as the numbers pkg/analysis judges. It speaks
// the API's JSON itself rather than through client_golang's api package: the
// answer is a handful of fields, and the errors a user sees name the server and
// say what to do.
//
// Errors come in two kinds, because a rollout treats them differently:
//   - *QueryError: Prometheus answered that the query itself is wrong (errorType
//     bad_data: it does not parse, a function is given the wrong type). The
//     check's configuration is broken; asking again gives the same answer.
//   - every other error (the server unreachable, a timeout, HTTP 5xx, an answer
//     that is not the API's JSON, a proxy's 401/403, an execution error): the
//     measurement could not be taken, and counts towards the check's
//     consecutiveErrorLimit ("Prometheus unreachable").
package promclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one query, connection included. A controller worker waits
// for it, so it is short: a Prometheus that needs longer is counted as an error,
// which the check's consecutiveErrorLimit tolerates.
const DefaultTimeout = 5 * time.Second

// maxBody bounds the answer read: a check's query gives a few series; 4 MiB is tens
// of thousands, more than any judgement needs, and stops a wrong URL (a file
// server, a UI) from filling memory.
const maxBody = 4 << 20

// Options say where Prometheus is and how to reach it.
type Options struct {
	// URL is the server's base URL ("http://prometheus.monitoring:9090", or with a
	// path prefix when it serves under one: "https://host/prometheus"); the API
	// path is added to it.
	URL string
	// BearerTokenFile, when set, is read before every query (a projected service
	// account token rotates) and sent as "Authorization: Bearer ...". BearerToken
	// is the token itself; the file wins when both are set.
	BearerToken, BearerTokenFile string
	// CAFile verifies the server's certificate (PEM); empty: the system roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key (PEM), given
	// together, for a server that wants one.
	CertFile, KeyFile string
	// Timeout bounds one query; zero: DefaultTimeout.
	Timeout time.Duration
}

// Client asks one Prometheus server.
type Client struct {
	base    *url.URL
	opts    Options
	http    *http.Client
	timeout time.Duration
}

// New checks the options (the URL, the files) and returns a client; it asks the
// server nothing.
func New(o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(o.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("Prometheus URL %q: want http:// or https:// and a host, like http://prometheus.monitoring:9090", o.URL)
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("Prometheus client certificate: give both the certificate and its key file")
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("Prometheus CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("Prometheus CA file %s holds no PEM certificate", o.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("Prometheus client certificate: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	if o.BearerTokenFile != "" {
		if _, err := readToken(o.BearerTokenFile); err != nil {
			return nil, err
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &Client{
		base:    u,
		opts:    o,
		http:    &http.Client{Transport: transport, Timeout: timeout},
		timeout: timeout,
	}, nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("Prometheus bearer token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Result is an instant query's answer.
type Result struct {
	// Type is the answer's resultType: "vector" or "scalar".
	Type string
	// Values are its samples, one per series of a vector (in the server's order), the
	// one value of a scalar; empty when the vector has no series. NaN and ±Inf are
	// kept as such: the check's rules judge them.
	Values []float64
	// Series names each vector sample by its labels ("{pod="web-1"}"); empty for a
	// scalar.
	Series []string
	// Warnings are the server's warnings, passed on for the record.
	Warnings []string
}

// QueryError is Prometheus' answer that the query itself is wrong (errorType
// bad_data), or a result of a type no check can judge (a range vector, a string):
// the check's configuration is at fault, not the server.
type QueryError struct {
	URL, Query, Msg string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("Prometheus at %s refused the query %q: %s", e.URL, e.Query, e.Msg)
}

// IsQueryError says whether err is a *QueryError.
func IsQueryError(err error) bool {
	var q *QueryError
	return errors.As(err, &q)
}

// Query evaluates query at instant at (zero: the server's now).
func (c *Client) Query(ctx context.Context, query string, at time.Time) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	endpoint := c.base.JoinPath("api/v1/query")
	form := url.Values{"query": {query}}
	if !at.IsZero() {
		form.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	where := endpoint.Redacted()
	token := c.opts.BearerToken
	if c.opts.BearerTokenFile != "" {
		var err error
		if token, err = readToken(c.opts.BearerTokenFile); err != nil {
			return Result{}, err
		}
	}
	status, body, err := c.do(ctx, http.MethodPost, endpoint, form, token)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		// A server or a proxy that allows GET only (POST came with Prometheus 2.1).
		status, body, err = c.do(ctx, http.MethodGet, endpoint, form, token)
	}
	if err != nil {
		return Result{}, fmt.Errorf("Prometheus at %s unreachable: %v", where, unwrapURL(err))
	}
	return decode(where, query, status, body)
}

func (c *Client) do(ctx context.Context, method string, endpoint *url.URL, form url.Values, token string) (int, []byte, error) {
	var req *http.Request
	var err error
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(ctx, method, endpoint.String(), strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		u := *endpoint
		u.RawQuery = form.Encode()
		req, err = http.NewRequestWithContext(ctx, method, u.String(), nil)
	}
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, err
	}
	if len(body) > maxBody {
		return 0, nil, fmt.Errorf("the answer is larger than %d MiB: is the URL Prometheus?", maxBody>>20)
	}
	return resp.StatusCode, body, nil
}

// unwrapURL drops url.Error's "Post \"http://...\":" prefix: the message names the
// URL already.
func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		if u.Timeout() {
			return fmt.Errorf("no answer in time (%v)", u.Err)
		}
		return u.Err
	}
	return err
}

// answer is the API's envelope (https://prometheus.io/docs/prometheus/latest/querying/api/).
type answer struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

type sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []json.RawMessage `json:"value"`
	Histogram json.RawMessage   `json:"histogram"`
}

// decode reads the server's answer: status success with a vector or scalar is a
// Result; bad_data is a *QueryError; any other answer an error naming the server.
func decode(where, query string, status int, body []byte) (Result, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil || a.Status == "" {
		return Result{}, fmt.Errorf("Prometheus at %s answered HTTP %d %s, not the query API's JSON%s: is the URL Prometheus'?",
			where, status, http.StatusText(status), snippet(body))
	}
	if a.Status != "success" {
		if a.ErrorType == "bad_data" {
			return Result{}, &QueryError{URL: where, Query: query, Msg: a.Error}
		}
		return Result{}, fmt.Errorf("Prometheus at %s could not answer (HTTP %d, %s): %s", where, status, a.ErrorType, a.Error)
	}
	r := Result{Type: a.Data.ResultType, Warnings: a.Warnings}
	switch a.Data.ResultType {
	case "scalar":
		var pair []json.RawMessage
		if err := json.Unmarshal(a.Data.Result, &pair); err != nil {
			return Result{}, fmt.Errorf("Prometheus at %s answered a scalar that does not read: %v", where, err)
		}
		v, err := value(pair)
		if err != nil {
			return Result{}, fmt.Errorf("Prometheus at %s answered a scalar that does not read: %v", where, err)
		}
		r.Values = []float64{v}
	case "vector":
		var samples []sample
		if err := json.Unmarshal(a.Data.Result, &samples); err != nil {
			return Result{}, fmt.Errorf("Prometheus at %s answered a vector that does not read: %v", where, err)
		}
		for _, s := range samples {
			name := labels(s.Metric)
			if len(s.Value) == 0 && len(s.Histogram) > 0 {
				return Result{}, &QueryError{URL: where, Query: query, Msg: "series " + name + " is a native histogram, not a number: wrap it in histogram_quantile(), histogram_count() or histogram_sum()"}
			}
			v, err := value(s.Value)
			if err != nil {
				return Result{}, fmt.Errorf("Prometheus at %s answered a sample of %s that does not read: %v", where, name, err)
			}
			r.Values = append(r.Values, v)
			r.Series = append(r.Series, name)
		}
	case "matrix":
		return Result{}, &QueryError{URL: where, Query: query, Msg: "the result is a range vector: a check needs one number per series; wrap it in a function over the range, like rate(...[1m]) or last_over_time(...[1m])"}
	default:
		return Result{}, &QueryError{URL: where, Query: query, Msg: fmt.Sprintf("the result is a %s: a check needs a number (a scalar or an instant vector)", a.Data.ResultType)}
	}
	return r, nil
}

// value reads a sample [ <unix seconds>, "<value>" ]; the value is a string so that
// NaN and ±Inf travel in JSON.
func value(pair []json.RawMessage) (float64, error) {
	if len(pair) != 2 {
		return 0, fmt.Errorf("want [time, \"value\"], got %d elements", len(pair))
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return 0, fmt.Errorf("value %s is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", s)
	}
	return v, nil
}

// labels writes a series' labels as PromQL does: {code="500",pod="web-1"}, sorted.
func labels(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// snippet is the start of a body that is not the API's, for the error message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return " (" + strconv.Quote(s) + ")"
}
