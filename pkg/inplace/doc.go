// Package inplace is the machinery kroll's controllers share to update pods in place
// (the proposal "Support deployment controller in-place update"): which template
// changes can be applied to a running pod (Diff, Judge), the readiness gate that takes a
// pod out of service while it changes, the record on the pod from which an update
// resumes (State), the steps of one pod's update (NextStep, Writer), the budget that
// paces them (WithinBudget), and the hand-over of pods between a Deployment's
// ReplicaSets, planned pass by pass by PlanHandOver.
//
// # Handing a pod from one ReplicaSet to another
//
// A Deployment annotated kroll.dev/update-strategy whose change allows it is rolled out
// without creating or deleting a pod: each pod moves from its old ReplicaSet A to the
// new one B with its new images. Kubernetes cannot change a pod's owner and two
// ReplicaSets' sizes in one transaction, so the hand-over is recorded on the two
// ReplicaSets (LeavingAnnotation on A and ArrivingAnnotation on B, pod names, written
// only by the Deployment controller), and kroll's ReplicaSet controller keeps one rule:
//
//	A pod its ReplicaSet names leaving, or one it names arriving, counts towards it
//	having enough pods and never towards having too many; and it takes over an
//	arriving pod, in one write, only while the pod's ReplicaSet names it leaving.
//
// Every state of the hand-over below is then stable for both ReplicaSets (A with N
// pods, B with k; m of A's pods move):
//
//  1. Give away: A names the m pods leaving and shrinks to N−m, in one write. A: N
//     pods, N−m of them not leaving = N−m replicas. Pods go first that are unavailable,
//     then available ones within maxUnavailable (at least 1); maxSurge does not apply.
//     A's status counts them as neither ready nor available from then on, as the
//     Deployment did when it picked them, and a status write that would only count
//     fewer replicas as they leave waits until the last has left, then (a second at
//     most) for the record's next write, to go with the observedGeneration of it.
//  2. Take in: once A's status shows it observed that write (observedGeneration), B
//     names the m pods arriving and grows to k+m, in one write. B: k pods + m arriving
//     = k+m replicas, so it creates none.
//  3. Take over: B's ReplicaSet controller writes each arriving pod once: B's
//     controllerRef in place of A's, B's pod-template-hash and labels, B's images. The
//     write carries the pod's resourceVersion, so it is made at most once. The kubelet
//     restarts the containers on the new images; the pod counts as out of service from
//     step 1 until they run and are ready. B's status write that counts the pods taken
//     over waits (a second at most) until they do: the next pick needs them available
//     anyway, and a report without the last few would make it that many short.
//  4. Tidy: the names of pods that have moved (or are gone) leave both records with
//     the next write to each ReplicaSet, made for a pick, or once no pod named is on
//     its way and none is left to pick (a write per arrival would cost a thousand-pod
//     rollout two writes a pass, a clear between rounds two writes a round). A name
//     left behind reads as nothing: leaving only while the pod's
//     ReplicaSet names it, arriving only while another names it leaving. The
//     Deployment and ReplicaSet controllers share their informers, so a ReplicaSet
//     controller that sees a record without a name already sees the pod where it went.
//
// The next pick waits until B names arriving every pod A names leaving, and A has
// observed its record: a pick in between would cost A a write of its own and put off
// B's. While those pods are still on their way, or B's status does not count the pods
// it took over yet, a pick of fewer than half of max(1, maxUnavailable) waits for them
// too: it would run as a round of its own, two record writes and a take-over sync that
// the next full round waits behind.
//
// The records are written as JSON patches on the ReplicaSet's uid and generation, and
// the ReplicaSets' statuses as JSON patches on their uid, not on the resourceVersion:
// the two controllers write the same ReplicaSets while a round is under way, and a
// write refused on a resourceVersion that the other's write had moved on cost its
// client a read and the write again, or a pass planned again.
//
// With a grace period (kroll.dev/in-place-grace-period) and the readiness gate, a pod
// is first taken out of service (gate False, and a State recorded on it, which also
// keeps its ReplicaSet from deleting it), handed over once the period is over, and put
// back (gate True, State removed) once the kubelet reports the new images running and
// ready: three writes. Without a grace period, the take-over is the pod's one write.
//
// Every step is decided afresh from the cache (records, States, owners, sizes,
// observed generations), never from memory, so a controller restarted anywhere
// resumes where the last one stopped: PlanHandOver is a pure function of what the
// caches show (HandOverView), and the Deployment controller only applies its plan.
// `kubectl rollout undo` is the same hand-over back to the older ReplicaSet; pods
// already on their way finish moving first. A change that cannot be made in place
// falls back to the rolling update (InPlaceIfPossible) or touches no pod
// (InPlaceOnly); the InPlaceUpdate condition and an event name the fields. Pods of
// opted-in Deployments are created with the readiness gate, which the Deployment
// controller sets True once their containers are ready.
//
// # Resizing a pod's containers
//
// A change of container cpu and memory requests and limits can be made in a running
// pod through its pods/resize subresource, within the API server's rules (DiffResize
// and ResizeFields name what it would refuse: a change of QoS class, other resources,
// a request or limit removed, plain init containers where the cluster does not allow
// them). PlanResize is one pod's resize: the resources to write and the containers the
// kubelet restarts for it (resizePolicy RestartContainer). A restarting resize takes
// its pod out of service like an image change; one that restarts nothing keeps the
// pod serving and is paced by maxUnavailable alone. NextResize reads the pod
// afterwards: Deferred waits, Infeasible recreates that pod (InPlaceIfPossible) or
// blocks the rollout naming it (InPlaceOnly, JudgeInfeasible), and ResizeDone is the
// end: the containers report the resources, no resize condition remains, and the pod's
// observedGeneration covers the write.
package inplace
