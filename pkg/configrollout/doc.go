// Package configrollout makes the ConfigMaps and Secrets a pod template references part
// of a workload's revision (opt-in: kroll.dev/config-rollout: "true"). Everything here
// is pure: the controllers read the objects from their caches and write through their
// own narrow interfaces.
//
// # Design: the user's spec is never rewritten
//
// A workload's spec keeps naming the user's own ConfigMaps and Secrets; kroll never
// writes it, and never writes the user's objects. Instead, for a Deployment:
//
//  1. The controller lists the objects the template references (Refs) and computes a
//     fingerprint of their data (Fingerprint). The new ReplicaSet's template is the
//     Deployment's template with one pod annotation more, kroll.dev/config-hash: the
//     fingerprint (TemplateWith). The fingerprint is therefore part of the
//     pod-template-hash: a data change makes a new ReplicaSet, rolled out through the
//     Deployment's own strategy like an image change.
//  2. Per revision the controller writes an immutable snapshot of each referenced
//     object (immutable: true, owned by that ReplicaSet, so it is garbage-collected with
//     it and pruned with revisionHistoryLimit), named SnapshotName(object, hash), and
//     records the mapping on the ReplicaSet's metadata (kroll.dev/config-snapshots,
//     Snapshots). The ReplicaSet's template still names the user's objects.
//  3. kroll's ReplicaSet controller substitutes the snapshot names when it creates a
//     pod (Substitute). Pods, not templates, name snapshots: `kubectl get pods -o yaml`
//     shows them.
//
// Why substitution at pod creation and not in the ReplicaSet's template: `kubectl
// rollout undo` copies a ReplicaSet's template back into the Deployment. With
// snapshot names in the template, an undo would write them into the user's spec, and the
// Deployment would then reference objects that are garbage-collected with their
// ReplicaSet. With the substitution at pod creation, an undo copies the user's names
// plus kroll.dev/config-hash (the revision's fingerprint); a Deployment whose template
// carries that annotation is pinned: its new ReplicaSet is the revision with that
// fingerprint, whose snapshots bring its configuration back (see Effective). The live
// ConfigMap stays as the user wrote it. The pin holds while the live data is what it
// was when the controller first saw the pin (recorded in kroll.dev/config-pinned-at
// on the Deployment's metadata); the next edit of a referenced object rolls forward
// again, to the live data.
//
// Takeover to upstream's controllers: upstream's Deployment controller does not know
// kroll.dev/config-hash and, finding no ReplicaSet whose template equals the
// Deployment's, rolls once to a ReplicaSet of the plain template: every pod that read
// a snapshot is replaced by one that reads the user's objects; kroll's ReplicaSet stays,
// scaled to 0, with its snapshots. Upstream's ReplicaSet controller creates pods from
// the template, so they name the live objects, even those of a kroll ReplicaSet that
// `kubectl rollout undo` scales up again under upstream. An edit of the data rolls
// nothing under upstream. Back from upstream, kroll adopts the newest revision when it
// is the plain template's (Decide): its pods read the live objects, nothing churns, the
// live fingerprint is recorded, and the next edit rolls onto snapshots. A workload an
// undo under upstream pinned stays on that revision, its pods as upstream made them.
//
// # StatefulSets and DaemonSets
//
// A set's revision is a ControllerRevision, holding the template patch kubectl applies
// on undo. The same design, placed there:
//
//  1. The fingerprint enters the revision through its template: the set controller
//     computes its update revision from a copy of the set whose template is Decide's
//     (the set's own plus HashAnnotation), never written back. The revision's data, and
//     so its hash and name (and a DaemonSet's controller-revision-hash), change with the
//     data: the set's own strategy rolls it — RollingUpdate with partition and
//     maxUnavailable, OnDelete, staged steps, self-healing. A change of HashAnnotation
//     is never made in place (pkg/inplace.Diff names it): pod volumes and environment
//     cannot change in a running pod.
//  2. The revision, when created, records its Snapshots in SnapshotsAnnotation, named
//     SnapshotName(object, hash) with the hash its name ends with; the snapshots are
//     owned by the ControllerRevision: pruned with it by revisionHistoryLimit,
//     garbage-collected with the set. The controller writes them before it makes any
//     pod of the revision; a write refused stops the sync (ReasonSnapshotFailed).
//  3. The set controller substitutes the snapshot names of a pod's revision when it
//     creates the pod (current or update revision alike).
//
// `kubectl rollout undo` on a set applies the old revision's data, HashAnnotation
// included, to the set's template: the set is pinned (Effective, the record on the
// set's metadata) and its update revision is that old revision again, renumbered, whose
// snapshots still exist. With a required object missing, the update revision stays the
// newest one of the set's template that resolved (Decide); with none, the newest
// revision. Upstream's set controllers, taking over, compute the update revision from
// the plain template: they roll once to a revision without HashAnnotation whose pods
// read the live objects, which kroll, taking over again, adopts as a Deployment's.
package configrollout
