// Package staging decides staged rollouts: how many pods a workload keeps on its old
// revisions while it rolls out a new one, and when it moves on. It is pure: the
// controllers of Deployments, StatefulSets and DaemonSets feed it what their caches
// show and carry out its answer, and the CLI renders the same answer.
//
// # The settings
//
// A workload opts in with annotations (apps/v1 validation accepts no new fields):
//
//	kroll.dev/partition      pods (a Deployment) or nodes (a DaemonSet) kept on the old
//	                         revisions: 10, or 50% of the desired replicas or eligible
//	                         nodes (rounded up, as a CloneSet's partition); a StatefulSet
//	                         has spec.updateStrategy.rollingUpdate.partition instead
//	kroll.dev/rollout-steps  "10%, pause: 2m, 50%, pause, 100%": a share is the pods
//	                         updated (10% of the replicas or eligible nodes, rounded
//	                         up; or a count: 3), and sets the partition to the rest;
//	                         pause: D waits D once the step before it is reached and
//	                         its pods are available; a bare pause waits for
//	                         `kroll rollout promote`; "analyze" holds until the
//	                         workload's kroll.dev/analysis checks decide (pkg/analysis;
//	                         where no controller runs them, it holds as a bare
//	                         pause). After the last step the rollout finishes (as if
//	                         the last share were 100%).
//
// A value that does not parse turns staging off (the workload rolls out as without the
// annotations) and is reported (Settings.Problems): a Warning event naming the
// annotation and the accepted form. With both, the steps govern and the partition is
// not used.
//
// # The record
//
// The step a rollout has reached is recorded on the workload, in one write that
// carries nothing else of the decision, so that a controller restarted at any moment
// neither skips nor repeats a step:
//
//	kroll.dev/rollout-step           "1/5": steps done of the steps (as Argo Rollouts
//	                                 counts them: at the bare pause after "10%", 1/5)
//	kroll.dev/rollout-step-revision  the revision the steps run for; a new template
//	                                 starts again at 0
//	kroll.dev/rollout-step-since     when the step count last changed (RFC 3339): a
//	                                 timed pause ends D after it
//
// `kroll rollout promote` writes the record one step on (--full: to the end);
// `kroll rollout abort` asks the controller for the self-healing rollback with
// kroll.dev/abort, naming the revision to abort.
//
// # A rollback is never staged
//
// A rollout back to a revision that ran before — `kubectl rollout undo`, kroll's own
// rollback on failure, `kroll rollout abort` — goes back at once: the partition and the
// steps hold only a rollout to a revision newer than every other (Progress.Rollback).
// Raising a partition does not take updated pods back, as a StatefulSet's partition
// does not; `kroll rollout abort` or `kubectl rollout undo` does.
package staging
