package rollingupdate

import (
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Options are one rolling update, as the command line states it.
type Options struct {
	Namespace string
	// OldName is the controller to update. NewName is the controller to update it to;
	// empty, a name is synthesized and the new controller is renamed to OldName at the
	// end (a NewController from a file with another name names it too).
	OldName, NewName string
	// Image (with Container and PullPolicy) or NewController (read from File) is what
	// to roll to; neither with Rollback.
	Image         string
	Container     string
	PullPolicy    corev1.PullPolicy
	NewController *corev1.ReplicationController
	File          string
	// Rollback reverses the update in progress from OldName: its partner is scaled down
	// and deleted, OldName scaled back up to its original size.
	Rollback bool
	// DeploymentKey is the label that tells the two controllers' pods apart.
	DeploymentKey string
	// UpdatePeriod is the pause after scaling the new controller up; PollInterval bounds
	// how late a time-based change (minReadySeconds passing) is noticed; Timeout is how
	// long the update may go without progress before it gives up.
	UpdatePeriod, PollInterval, Timeout time.Duration
	MaxSurge, MaxUnavailable            intstr.IntOrString
	// DryRun prints what would be rolled from and to, and changes nothing.
	DryRun bool
	// Command is the command line, shown to a client refused by the lock.
	Command string
	Out     io.Writer
	// Hit is called with a name at each point between two of the update's writes where
	// a crash must leave a resumable state ("rolling-update/mid-scale", ...): the CLI
	// passes its failpoints, so crash tests can stop the command there. Nil does nothing.
	Hit func(name string)
}

// Validate checks the options that need no API call.
func (o *Options) Validate() error {
	switch {
	case o.OldName == "":
		return errors.New("the name of the replication controller to update is required")
	case o.Rollback && (o.Image != "" || o.NewController != nil):
		return errors.New("--rollback takes no --image and no -f: it returns to the controller the update started from")
	case !o.Rollback && o.Image == "" && o.NewController == nil:
		return errors.New("say what to update to: --image=IMAGE or -f FILE")
	case o.Image != "" && o.NewController != nil:
		return errors.New("--image and -f cannot be used together")
	case o.NewName != "" && o.NewName == o.OldName:
		return fmt.Errorf("the new replication controller cannot have the name of the old one (%s)", o.OldName)
	case o.UpdatePeriod < 0 || o.PollInterval <= 0 || o.Timeout <= 0:
		return errors.New("--update-period must be ≥ 0, --poll-interval and --timeout > 0")
	case o.Container != "" && o.Image == "":
		return errors.New("--container goes with --image")
	}
	if errs := validation.IsQualifiedName(o.DeploymentKey); len(errs) > 0 {
		return fmt.Errorf("--deployment-label-key %q: %s", o.DeploymentKey, errs[0])
	}
	switch o.PullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return fmt.Errorf("--image-pull-policy %q: must be Always, Never or IfNotPresent", o.PullPolicy)
	}
	if o.PullPolicy != "" && o.Image == "" {
		return errors.New("--image-pull-policy goes with --image")
	}
	if rc := o.NewController; rc != nil {
		if rc.Name == "" {
			return fmt.Errorf("%s: the replication controller has no name", o.File)
		}
		if o.NewName != "" && rc.Name != o.NewName {
			return fmt.Errorf("%s names replicationcontroller/%s, not %s", o.File, rc.Name, o.NewName)
		}
		if rc.Namespace != "" && rc.Namespace != o.Namespace {
			return fmt.Errorf("%s is for namespace %s, not %s", o.File, rc.Namespace, o.Namespace)
		}
		if rc.Spec.Template == nil {
			return fmt.Errorf("%s: replicationcontroller/%s has no pod template", o.File, rc.Name)
		}
	}
	for _, v := range []intstr.IntOrString{o.MaxSurge, o.MaxUnavailable} {
		if _, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, true); err != nil {
			return fmt.Errorf("--max-surge/--max-unavailable %q: %w", v.String(), err)
		}
	}
	if o.MaxSurge.String() == "0" && o.MaxUnavailable.String() == "0" {
		return errors.New("--max-surge and --max-unavailable cannot both be 0: the update could never move")
	}
	return nil
}

// renames tells whether the new controller takes the old one's name at the end.
func (o *Options) renames() bool {
	if o.NewName != "" {
		return false
	}
	return o.NewController == nil || o.NewController.Name == o.OldName
}
