// Package controllertest holds what the controllers' tests share: fakes of the narrow
// writers and readers of what a controller (or a simulated kubelet) recorded.
package controllertest

import "k8s.io/client-go/tools/record"

// Drain returns the events rec holds now ("Warning RolledBack <message>"), oldest
// first, without waiting for more.
func Drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
