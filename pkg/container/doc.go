// Package container models what a container on a simulated node runs, serves and
// holds, so that probes, commands, exec, logs and port-forward see what they would see on
// a real node, without a container runtime.
//
//   - images.go: per image repository, a behaviour — its default entrypoint and
//     command, the files it ships, the programs it provides and, for its servers, the
//     ports they listen on and what they answer (nginx serves
//     /usr/share/nginx/html at / on 80; httpd its htdocs on 80; redis, postgres and
//     mysql accept TCP on 6379, 5432 and 3306, and redis answers PING in RESP
//     (talk.go); agnhost's netexec, serve-hostname, liveness, test-webserver, grpc-health-checking and pause modes; pause; busybox
//     and alpine run their command). A repository without a model is taken to be a
//     healthy server on every port, so that users' own images keep working.
//   - fs.go: an instance's file system, from the image's files; what the command or an
//     exec writes lasts as long as the instance.
//   - parse.go, shell.go, builtins.go, tar.go: the shell subset for command, args and
//     exec; stdin.go: standard input (cat, tar x, a shell reading its commands).
//   - metrics.go: every HTTP server answers /metrics with the counters and latency
//     histogram of a steady synthetic load (10 requests a second by default), computed
//     from how long it has served when asked: no goroutine or timer per container.
//     Its error ratio and latency are the node's fault rules' (Spec.Traffic).
//   - instance.go: one run of a container driven by the caller's clock: AdvanceTo runs
//     its command (sleeps end, files change, it exits), HTTPGet/Dial/GRPCHealth/Exec
//     are what probes use.
//
// Everything is pure and deterministic: no sockets, no goroutines, no wall clock.
package container
