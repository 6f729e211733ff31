// Package rollingupdate is the client-side rolling update of a ReplicationController
// (`kroll rolling-update`, the verb kubectl had until 1.18): pods move from controller
// OLD to controller NEW a few at a time, driven by this client, not by a controller.
//
// # The update
//
//  1. OLD gets the deployment label (default key "deployment", value the hash of its
//     template) on its template, then on its pods in place, then in its selector; NEW is
//     OLD's spec with the change, the label valued with NEW's template hash. The two
//     selectors then differ in that label's value, so no pod matches both. (A file that
//     names another controller brings its own selector, which must differ likewise.)
//  2. OLD is annotated with its partner and its size; NEW is created at size 0,
//     annotated with its source and the size it ends at.
//  3. NEW is scaled up as far as --max-surge allows, and after --update-period OLD is
//     scaled down as far as --max-unavailable allows given NEW's available pods (see
//     Step); each resize is waited for until the pods exist or are gone, so the bounds
//     hold for the pods themselves. Repeat until NEW is at its size and OLD at 0.
//  4. With a NEW name given, OLD is deleted and NEW kept. Without one, NEW takes OLD's
//     name (the rename below).
//
// # Recovery
//
// Everything the update needs to go on is on the controllers, in the annotations
// kubectl used (so an update kubectl began can be finished too):
//
//	kubectl.kubernetes.io/desired-replicas   on the controller scaled up: its final size
//	kubectl.kubernetes.io/update-source-id   on the controller scaled up: "<source>:<uid>"
//	kubectl.kubernetes.io/next-controller-id on the controller scaled down: its partner
//	kubectl.kubernetes.io/original-replicas  on the controller scaled down: its first size
//	kroll.dev/rename-from                    on the rename stand-in: the controller renamed
//
// Running the same command again finds where the update stands — OLD alone, OLD and a
// NEW sourced from it, NEW alone, the stand-in with or without NEW — and goes on from
// there; nothing is done twice, because every step checks the state it would produce.
// The survivor's annotations are removed last, after its partner is deleted, so a
// crash between the two still finds the update.
//
// # The rename
//
// Objects cannot be renamed, and two controllers with the same selector must never
// coexist with a size above 0: the second would see the first's pods as taken and
// create as many again. The rename therefore goes: delete OLD (at 0 pods); create the
// stand-in under OLD's name — NEW's spec at size 0, with the extra label
// kroll.dev/renaming=true in its selector and template so that it selects no pod;
// delete NEW with orphan propagation, so its pods stay running and lose their owner;
// then give the stand-in NEW's selector and its final size in one update, whereupon it
// adopts the orphans instead of creating pods. No pod is created or deleted by a rename.
//
// # Rollback
//
// --rollback turns an update in progress around, as the design's Abort section says:
// the controller the update started from gets the desired-replicas annotation back (its
// original size) and becomes the one scaled up; its partner is scaled down and deleted.
//
// # Concurrency
//
// A client holds a coordination.k8s.io Lease named "kroll-rolling-update.<controller>"
// for each controller it touches, and renews it; another client finding one held is
// refused with the holder's identity and command. A lease not renewed for
// LockDuration, or held by a process of this machine that has exited (a client that
// was killed), is taken over, so that a re-run after a crash starts at once.
//
// # Files
//
// options.go holds what the command line states and its checks; updater.go runs one
// update (Run) and holds its API helpers; resolve.go reads the controllers and finds
// where the update stands (a resolution); start.go, scale.go and finish.go carry out
// steps 1–2, 3 and 4 (with the rename and the rollback's end); plan.go is the pure
// arithmetic of one scaling step (Step); controllers.go builds and compares the
// controllers; lock.go and watch.go are the leases and the informer view.
//
// Options.Hit is called at each point between two writes where a crash must leave a
// resumable state; the CLI passes its failpoints (KROLL_FAILPOINTS) so that crash
// tests can kill the command there.
package rollingupdate
