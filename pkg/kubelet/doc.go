// Package kubelet simulates the kubelets of many nodes in one process, so that a whole
// cluster runs on one machine without containers.
//
// It registers Nodes and keeps their heartbeat (a Lease in kube-node-lease every 10s,
// and the Ready condition) fresh, and moves every pod bound to them through the
// lifecycle a real kubelet reports, as strictly as a real one:
//   - Admission (admission.go): a pod is admitted once, when first seen, against its
//     node's allocatable and the pods the node already runs, with the kubelet's checks
//     in its order; a pod the node cannot run (OutOfcpu, OutOfmemory, OutOfpods,
//     NodePorts, NodeAffinity, TaintToleration, …) is Failed with the kubelet's reason
//     and message and a Warning event, and no container starts.
//   - Image pulls (registry.go, catalog.yaml): a catalogue of well-known repositories and
//     their tags; a tag it does not list fails ErrImagePull, then ImagePullBackOff, with
//     the pull retried under back-off. Other repositories pull (or fail, if so configured).
//   - Volumes (volumes.go): a pod whose claims are not bound to volumes usable on its
//     node waits in ContainerCreating, with FailedMount events, until they are.
//   - Running (status.go, the pod's status as a pure function of its spec, its status
//     and the time; containers.go, each container's states; conditions.go, the pod's
//     conditions): ContainerCreating for a startup delay, Running and Ready (gated by
//     the pod's readiness gates), restarts of a container whose image changed in place.
//   - Containers and probes (runs.go, probeloop.go): each running app container is an
//     instance of pkg/container's model of its image — what it serves, its files, its
//     command in a documented shell subset — and its probes are pkg/prober's state
//     machines. A command that ends ends the container (Completed or Error; the pod's
//     restartPolicy restarts it, or it stays terminated and a Job's pod completes);
//     readiness and startup probes decide ready and started; a failed liveness or
//     startup probe kills it (exit code 137, Killing event): a server stops at once, a
//     shell or sleep as PID 1 ignores SIGTERM and stops when the grace period ends (the
//     probe's terminationGracePeriodSeconds, else the pod's; kill.go). Restarts follow
//     the kubelet's back-off (backoff.go): the first at once, then after 10s, 20s, …
//     5m, in CrashLoopBackOff. Failed probes post the kubelet's Unhealthy events. One
//     goroutine runs every due probe from a heap, and syncs a pod only when a result
//     changes. A sidecar (sidecars.go) runs the same way, restarting whatever the pod's
//     restartPolicy, without holding back app containers that have started.
//     Init containers (initcontainers.go) run their commands in the same model, one
//     after another: exit 0 lets the next start; another code restarts it with
//     back-off (Init:CrashLoopBackOff), or under restartPolicy Never fails the pod
//     (Init:Error); a command that runs for ever keeps the pod initializing. An image
//     the model does not know completes at once as an init container.
//   - Events (events.go): every status write posts what the kubelet posts for the
//     change it reports, decided by a pure function of the old and new status —
//     Pulling, Pulled (with the pull's time and the image's size, or "already
//     present", per imagePullPolicy and the images the node holds), Failed and BackOff
//     of a pull, Created, Started, BackOff of a restart, Killing of a changed container
//     — and a deleted pod's running containers get Killing "Stopping container c".
//     A pod at rest posts nothing. client-go's broadcaster aggregates them per node as
//     the kubelet's does.
//   - Termination (termination.go): a deleted pod serves until its grace period (capped)
//     is over, then reports its containers terminated, not Ready, Succeeded or Failed,
//     and is deleted with a zero grace period; a finalizer keeps it with that status.
//     A pod deleted with a zero grace period and no finalizer is gone with the request
//     that deleted it: the kubelet only reads it once, 100 ms later, if its DELETED
//     event has not come by then.
//   - In-place resize (resize.go, the pure decisions; resizing.go, their events): a
//     change of a pod's container resources through pods/resize is allocated against
//     the other pods' allocated resources (Deferred when they hold the room), actuated
//     after kroll.dev/resize-delay with restarts per resizePolicy, and reported in
//     containerStatuses[].resources and allocatedResources.
//
// The kubelet API (api*.go), when Config.API is set: every node serves HTTPS on its
// InternalIP at the port it advertises in daemonEndpoints (one port for all the nodes
// of a simulator), with a serving certificate the cluster CA signs for the nodes'
// addresses. A client must present a certificate the CA signed (the API server's
// kubelet client certificate: no certificate is 401) and is authorized by a
// SubjectAccessReview on nodes/proxy (nodes/log, nodes/stats, … by path, as the
// kubelet maps them). It serves /healthz; /containerLogs from the container model's
// log (tailLines, sinceSeconds, sinceTime, timestamps, limitBytes, previous, follow
// until the instance ends or is killed; the instance as the kubelet picks it, the last
// one ended during CrashLoopBackOff; the last 1000 lines, at most 16 KiB, of each instance are kept, the model's
// stand-in for the kubelet's log rotation); /exec and /attach through
// k8s.io/cri-streaming (the shell subset of pkg/container runs the command against the
// instance's files, exit codes reach the client; with stdin, a shell reads its
// commands line by line, with a tty's prompt and echo, and cat or tar x take the whole
// input, hence kubectl cp (apiexec.go); attach streams what the main process writes
// and feeds a main sh with stdin open); /portForward to what the pod's containers
// serve (HTTP requests answered from the model, each logged in the server's access
// log; a TCP server's protocol as far as the model speaks it, redis's PING; a port
// nothing serves refused in containerd's words).
// An instance the pod's sync does not model (no probes, a command that runs for ever)
// is modelled when first asked for, from its start time; the API keeps the current
// and previous instance of each container until the pod goes. PodConnection (egress.go)
// answers a connection to a pod's IP the same way: the cluster's egress proxy gives
// kube-apiserver's pod and service proxies to it, since no simulated pod's address
// accepts a connection of its own.
//
// Fault rules make chosen images never pull, crash-loop, never become ready, or become
// ready late, so failed rollouts reproduce; the serving faults ErrorRate(0.2) and
// Latency(300ms) set how the synthetic load of their HTTP servers fares, which each
// server reports on /metrics (pkg/container's metrics.go), so that a rollout judged by
// its metrics has a bad version to catch. A Prometheus reaches those servers the way
// the API server's pod proxy and port-forward do: a connection to a pod's IP is given
// to PodConnection.
//
// # Why not kwok
//
// sigs.k8s.io/kwok, the Kubernetes project's own simulated kubelet, was the first
// candidate. It is written here instead because:
//   - kwok drives pods through Stage objects, CEL/jq-like selectors over the pod with
//     delays and status templates. Readiness gates, an in-place image change that restarts
//     one container (restartCount+1, new imageID, not ready for a while), and per-image
//     faults such as CrashLoopBackOff with back-off would each be stages of our own
//     writing, and the engine that evaluates them would sit on every pod update.
//   - On a 2-core machine, kwok's node heartbeats lagged behind pod work during a
//     1,000-pod rollout and upstream's node-lifecycle controller marked every pod
//     NotReady. Here heartbeats run on their own goroutines and their own connection,
//     never queued behind pod status writes.
//   - As a library kwok brings its own k8s.io module versions, which must line up
//     with the v0.36.3 staging modules kroll pins for k8s.io/kubernetes v1.36.3.
//
// What this package does is a level-based function of the pod (simulator.podStatus,
// pure and table-tested) plus a small informer/workqueue loop (Kubelet), which is less
// code than the stages it would otherwise take.
//
// # Design
//
// One informer watches bound pods (spec.nodeName != ""), another the simulated nodes
// (their labels and taints matter to admission); a workqueue with PodWorkers workers
// syncs the pods. Admission is serialised per node; a restarted simulator admits the
// pods it finds oldest first, as a restarted kubelet does. Each sync computes the status the pod should report now from its
// spec, its current status and a small per-pod clock, writes it with one strategic-merge
// patch of the kubelet-owned fields (guarded by the pod's UID) only if it changed, and
// re-queues the pod for the instant it next changes by itself. There is no polling:
// timers come from the workqueue's AddAfter. A pod whose last write has not yet come
// back through the informer is not synced again until it has, so a change (a crash,
// a restart) is never counted twice.
package kubelet
