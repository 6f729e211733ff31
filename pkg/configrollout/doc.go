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
// Takeover to upstream's controllers: upstream's ReplicaSet controller creates pods
// from the template, so they name the live objects; upstream's Deployment controller
// does not know kroll.dev/config-hash and, finding no ReplicaSet whose template equals
// the Deployment's, rolls once to a ReplicaSet of the plain template.
package configrollout
