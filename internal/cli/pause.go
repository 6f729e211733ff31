package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/kubectl/pkg/scheme"

	"github.com/kroll-dev/kroll/pkg/failure"
)

// kubectl's own pause and resume, kept for the Deployments they handle: kroll's take
// the StatefulSets and DaemonSets kroll pauses and hand every other object to them.
var (
	kubectlPauser  = polymorphichelpers.ObjectPauserFn
	kubectlResumer = polymorphichelpers.ObjectResumerFn
)

// withKrollPauseResume makes kubectl's `rollout pause` and `rollout resume` commands,
// which take their pauser and resumer from polymorphichelpers when they run, pause and
// resume what kroll pauses. The commands stay kubectl's: the object read, one strategic
// merge patch of the change, and the lines "daemonset.apps/agent paused",
// "statefulset.apps/web resumed", `error: statefulsets.apps "web" is not paused`.
func withKrollPauseResume(pause, resume *cobra.Command) {
	polymorphichelpers.ObjectPauserFn = pauseObject
	polymorphichelpers.ObjectResumerFn = resumeObject
	pause.Long = strings.Replace(pause.Long, "Currently only deployments support being paused.", "Deployments and, with kroll's DaemonSet controller, DaemonSets can be paused: the annotation "+failure.PausedAnnotation+
		`: "true" stops the DaemonSet replacing pods until resumed.`, 1)
	resume.Long = strings.Replace(resume.Long, "Currently only deployments support being resumed.", "Deployments can be resumed, and what kroll pauses:", 1)
	resume.Long += " a DaemonSet paused with " + failure.PausedAnnotation +
		" (by 'kroll rollout pause', or by kroll.dev/on-failure: Pause), and a StatefulSet whose partition kroll raised on failure:" +
		" the partition is put back from " + failure.PartitionBeforePauseAnnotation + ". The workload keeps " + failure.PausedOnFailureAnnotation +
		", so kroll does not pause it again for the revision that failed."
}

// pauseObject is kubectl's pauser, and for a DaemonSet kroll.dev/paused: "true".
func pauseObject(obj runtime.Object) ([]byte, error) {
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return kubectlPauser(obj)
	}
	if ds.Annotations[failure.PausedAnnotation] == "true" {
		return nil, errors.New("is already paused")
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[failure.PausedAnnotation] = "true"
	return encodeApps(ds)
}

// resumeObject is kubectl's resumer, and for what kroll paused: a DaemonSet loses
// kroll.dev/paused; a StatefulSet gets back the partition it had before kroll raised
// it (kroll.dev/partition-before-pause, which goes). One object, one patch: the
// controller never sees the partition back without the annotation gone, or the other
// way round. kroll.dev/paused-on-failure stays on both: it tells the controller the
// user resumed the failed revision, which it then does not pause again.
func resumeObject(obj runtime.Object) ([]byte, error) {
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		if _, ok := o.Annotations[failure.PausedAnnotation]; !ok {
			return nil, errors.New("is not paused")
		}
		delete(o.Annotations, failure.PausedAnnotation)
		return encodeApps(o)
	case *appsv1.StatefulSet:
		raw, ok := o.Annotations[failure.PartitionBeforePauseAnnotation]
		if !ok {
			return nil, errors.New("is not paused")
		}
		before, err := strconv.ParseInt(raw, 10, 32)
		if err != nil || before < 0 {
			return nil, fmt.Errorf("has %s=%q, which is not a partition (a whole number of at least 0): set spec.updateStrategy.rollingUpdate.partition yourself and remove the annotation", failure.PartitionBeforePauseAnnotation, raw)
		}
		if o.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType || o.Spec.UpdateStrategy.Type == "" {
			if o.Spec.UpdateStrategy.RollingUpdate == nil {
				o.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
			}
			partition := int32(before)
			o.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
		}
		delete(o.Annotations, failure.PartitionBeforePauseAnnotation)
		return encodeApps(o)
	}
	return kubectlResumer(obj)
}

// encodeApps encodes an apps/v1 object as kubectl's pausers do, for the patch kubectl
// computes against the object it read.
func encodeApps(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(scheme.Codecs.LegacyCodec(appsv1.SchemeGroupVersion), obj)
}
