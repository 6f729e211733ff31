// Package analysistest holds a scripted Prometheus for the tests of analyses and of
// the controllers that run them.
package analysistest

import (
	"context"
	"errors"
	"time"

	"github.com/kroll-dev/kroll/pkg/analysis/promclient"
)

// Answer is one scripted answer to a query.
type Answer func() (promclient.Result, error)

// Prometheus answers each query with the next of its Answers, and records the
// queries Asked; with no answer left it answers an error.
type Prometheus struct {
	Answers []Answer
	Asked   []string
}

// Query answers the next scripted answer.
func (p *Prometheus) Query(_ context.Context, q string, _ time.Time) (promclient.Result, error) {
	p.Asked = append(p.Asked, q)
	if len(p.Answers) == 0 {
		return promclient.Result{}, errors.New("no answer scripted")
	}
	a := p.Answers[0]
	p.Answers = p.Answers[1:]
	return a()
}

// Value answers a vector of one series of value v.
func Value(v float64) Answer {
	return func() (promclient.Result, error) { return promclient.Result{Type: "vector", Values: []float64{v}}, nil }
}

// Failing answers err, as a server not answering.
func Failing(msg string) Answer {
	return func() (promclient.Result, error) { return promclient.Result{}, errors.New(msg) }
}

// Refused answers that the query is wrong (bad_data) with msg.
func Refused(msg string) Answer {
	return func() (promclient.Result, error) {
		return promclient.Result{}, &promclient.QueryError{URL: "http://127.0.0.1:9090/api/v1/query", Query: "q", Msg: msg}
	}
}
