// Package failure decides, from pod signals alone, when a rollout has failed, and what
// a workload asked to happen then. It is pure: the controllers of Deployments,
// StatefulSets and DaemonSets feed it what their caches show and carry out its answer.
//
// # The policy
//
// A workload opts in with annotations (apps/v1 validation accepts no new fields):
//
//	kroll.dev/on-failure                 Rollback, Pause or None (the default: upstream's behaviour)
//	kroll.dev/failure-threshold          failed new pods that fail the rollout: 2, or 25% of the
//	                                     desired replicas (rounded up, at least 1); default 1
//	kroll.dev/failure-restarts           restarts that make a container failed; default 3
//	kroll.dev/ready-timeout              running but not Ready this long is failed (Go duration);
//	                                     unset: never
//	kroll.dev/progress-deadline-seconds  StatefulSets and DaemonSets: progressDeadlineSeconds, which
//	                                     their API lacks; unset: none
//
// A value that does not parse turns the whole policy off (as None) and is reported
// (Policy.Problems): a Warning event and a FailurePolicy condition naming the annotation
// and the accepted values. Half a policy is never applied.
//
// # What fails a rollout
//
// Only pods of the revision being rolled out count, never older ones, and only failed
// pods, never merely unavailable ones: a slow rollout is not a failed one. A pod is
// failed (PodFailure) when a container waits with CrashLoopBackOff, ImagePullBackOff,
// ErrImagePull, InvalidImageName, CreateContainerConfigError or CreateContainerError;
// when a container restarted failure-restarts times; or when its containers all run
// but it has not been Ready for ready-timeout since the last of them started. The
// rollout fails (Judge) when failed pods reach the threshold, or when it passed its
// progress deadline.
//
// # Once, and never in a loop
//
// The controllers decide from the cache and act in one write of the workload, which
// carries the record of what was done (RolledBackFromAnnotation, PausedOnFailureAnnotation
// with the revision): a controller killed between deciding and writing decides the same
// again, and one that sees the record does not act again for that revision. A rollback
// brings back a revision that completed before; a revision that completed once is never
// judged again, so a rollback cannot be rolled back. Only a new change by the user starts
// a new rollout, which is judged afresh.
package failure
