package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"k8s.io/client-go/kubernetes"

	"github.com/kroll-dev/kroll/pkg/failure"
	"github.com/kroll-dev/kroll/pkg/staging"
)

// Verbs the dashboard can ask of a workload: the rollout CLI's own.
const (
	VerbPromote    = "promote"
	VerbPromoteAll = "promote-all"
	VerbAbort      = "abort"
	VerbPause      = "pause"
	VerbResume     = "resume"
	VerbUndo       = "undo"
	VerbRestart    = "restart"
	VerbSetImage   = "set-image"
)

// Action is one write the dashboard asks for: a verb on a workload, with the verb's
// arguments.
type Action struct {
	Verb                  string
	Kind, Namespace, Name string
	// Revision is undo's target; 0 for the previous revision.
	Revision int64
	// Container and Image are set-image's.
	Container, Image string
}

// Actions make the writes. Each call gets the client to make it with: in-cluster,
// one impersonating the user who asked, so the cluster's RBAC decides. The returned
// line is what the CLI prints ("deployment.apps/web paused"); an error is the API
// server's or the CLI's one line.
type Actions interface {
	Do(ctx context.Context, client kubernetes.Interface, a Action) (string, error)
}

// ActionOf reads an action from a form (or a confirmation link's query) for the
// workload kind/ns/name; an unknown verb or a bad argument is an error.
func ActionOf(form url.Values, kind, ns, name string) (Action, error) {
	a := Action{Verb: form.Get("verb"), Kind: kind, Namespace: ns, Name: name}
	switch a.Verb {
	case VerbPromote, VerbPromoteAll, VerbAbort, VerbPause, VerbResume, VerbRestart:
	case VerbUndo:
		if r := form.Get("revision"); r != "" && r != "0" {
			n, err := strconv.ParseInt(r, 10, 64)
			if err != nil || n < 0 {
				return a, fmt.Errorf("undo takes a revision number, not %q", r)
			}
			a.Revision = n
		}
	case VerbSetImage:
		a.Container, a.Image = form.Get("container"), form.Get("image")
		if a.Container == "" || a.Image == "" {
			return a, fmt.Errorf("set image needs a container and an image")
		}
	default:
		return a, fmt.Errorf("unknown action %q", a.Verb)
	}
	return a, nil
}

// Values are a's form fields, for the confirmation's form.
func (a Action) Values() url.Values {
	v := url.Values{"verb": {a.Verb}}
	if a.Revision != 0 {
		v.Set("revision", strconv.FormatInt(a.Revision, 10))
	}
	if a.Verb == VerbSetImage {
		v.Set("container", a.Container)
		v.Set("image", a.Image)
	}
	return v
}

// Ref is the workload as the CLI names it: deployment/web.
func (a Action) Ref() string { return a.Kind + "/" + a.Name }

// Command is the CLI command that makes the same write.
func (a Action) Command() string {
	ns := " -n " + a.Namespace
	switch a.Verb {
	case VerbPromote:
		return "kroll rollout promote " + a.Ref() + ns
	case VerbPromoteAll:
		return "kroll rollout promote " + a.Ref() + " --full" + ns
	case VerbUndo:
		if a.Revision != 0 {
			return fmt.Sprintf("kroll rollout undo %s --to-revision=%d%s", a.Ref(), a.Revision, ns)
		}
		return "kroll rollout undo " + a.Ref() + ns
	case VerbSetImage:
		return fmt.Sprintf("kroll set image %s %s=%s%s", a.Ref(), a.Container, a.Image, ns)
	}
	return "kroll rollout " + a.Verb + " " + a.Ref() + ns
}

// Writes says what a will write, for its confirmation: the fields and annotations the
// CLI's verb changes.
func (a Action) Writes() string {
	obj := fmt.Sprintf("%s in namespace %s", a.Ref(), a.Namespace)
	switch a.Verb {
	case VerbPromote:
		return fmt.Sprintf("the step record %s of %s, one step on: the controller then rolls out the next step", staging.StepAnnotation, obj)
	case VerbPromoteAll:
		return fmt.Sprintf("the step record %s of %s, to the last step: the controller then rolls out every remaining pod", staging.StepAnnotation, obj)
	case VerbAbort:
		return fmt.Sprintf("the annotation %s on %s, naming the revision rolled out now: the controller rolls it back", staging.AbortAnnotation, obj)
	case VerbPause:
		if a.Kind == "daemonset" {
			return fmt.Sprintf("the annotation %s=\"true\" on %s", failure.PausedAnnotation, obj)
		}
		return "spec.paused: true on " + obj
	case VerbResume:
		if a.Kind == "deployment" {
			return "spec.paused: false on " + obj
		}
		return "what kroll paused on " + obj + " is undone (" + failure.PausedAnnotation + " removed, or the partition put back from " + failure.PartitionBeforePauseAnnotation + ")"
	case VerbUndo:
		rev := "the previous revision"
		if a.Revision != 0 {
			rev = "revision " + strconv.FormatInt(a.Revision, 10)
		}
		return "the pod template of " + rev + " into " + obj
	case VerbRestart:
		return "the annotation kubectl.kubernetes.io/restartedAt (now) on the pod template of " + obj + ": every pod is replaced"
	case VerbSetImage:
		return fmt.Sprintf("image %s for container %s in the pod template of %s", a.Image, a.Container, obj)
	}
	return ""
}
