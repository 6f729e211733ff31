package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kroll-dev/kroll/internal/failpoint"
	"github.com/kroll-dev/kroll/pkg/rollingupdate"
)

func newRollingUpdateCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	o := rollingupdate.Options{Out: stdout, Hit: failpoint.Hit}
	var file, maxSurge, maxUnavailable, pullPolicy, dryRun string
	var connection *clientFlags
	cmd := &cobra.Command{
		Use:   "rolling-update OLD [NEW] (--image=IMAGE | -f FILE)",
		Short: "Roll a ReplicationController's pods over to a new image or template, resumably",
		Long: `Replace the pods of replication controller OLD with those of a new controller, a
few at a time: scale the new one up (at most --max-surge pods above the size), wait
until its pods are ready, scale OLD down (keeping all but --max-unavailable pods
available), and repeat. Without NEW, the new controller gets a synthesized name and
takes OLD's name at the end; with NEW (or a file naming another controller), NEW is
kept and OLD deleted.

The update is recorded on the controllers as it goes: if the command is stopped or
killed at any point, running the same command again resumes and finishes it.
--rollback reverses an update in progress. Only one client updates a controller at
a time.`,
		Example: `  # Update the pods of frontend to image:v2, keeping the name frontend
  kroll rolling-update frontend --image=image:v2

  # Update frontend-v1 to the controller in frontend-v2.json
  kroll rolling-update frontend-v1 -f frontend-v2.json

  # Abort the update of frontend in progress and go back to the old pods
  kroll rolling-update frontend --rollback`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.OldName = args[0]
			if len(args) == 2 {
				o.NewName = args[1]
			}
			o.Command = "kroll " + strings.Join(os.Args[1:], " ")
			var err error
			if o.MaxSurge, err = parseIntOrPercent("--max-surge", maxSurge); err != nil {
				return err
			}
			if o.MaxUnavailable, err = parseIntOrPercent("--max-unavailable", maxUnavailable); err != nil {
				return err
			}
			o.PullPolicy = corev1.PullPolicy(pullPolicy)
			switch dryRun {
			case "none", "false":
			case "client", "true":
				o.DryRun = true
			default:
				return fmt.Errorf("--dry-run=%s: rolling-update supports none and client", dryRun)
			}
			if file != "" {
				if o.Image != "" || o.Rollback {
					return fmt.Errorf("-f cannot be used with --image or --rollback")
				}
				o.File = file
				if o.NewController, err = readReplicationController(file, stdin); err != nil {
					return err
				}
			}
			client, ns, host, err := connection.client()
			if err != nil {
				return err
			}
			o.Namespace = ns
			if err := o.Validate(); err != nil {
				return err
			}
			// Ctrl-C or SIGTERM stops the update between steps, leaving it resumable.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return explainUnreachable(rollingupdate.Run(ctx, client, o), host)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "file (or - for stdin) holding the new ReplicationController")
	f.StringVar(&o.Image, "image", "", "image to update the pods to (creates the new controller from OLD)")
	f.StringVar(&o.Container, "container", "", "container whose image --image sets (needed for pods with several containers)")
	f.StringVar(&pullPolicy, "image-pull-policy", "", "imagePullPolicy for --image: Always, Never or IfNotPresent (needed when --image is the current image)")
	f.BoolVar(&o.Rollback, "rollback", false, "reverse the update of OLD in progress: scale OLD back up and delete its partner")
	f.DurationVar(&o.UpdatePeriod, "update-period", time.Minute, "time to wait after scaling the new controller up, before scaling the old one down")
	f.DurationVar(&o.PollInterval, "poll-interval", 3*time.Second, "longest time between checks of the pods' state (changes are seen at once)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up (leaving the update resumable) after this long without progress")
	f.StringVar(&o.DeploymentKey, "deployment-label-key", "deployment", "label whose value (a template hash) tells the two controllers' pods apart")
	f.StringVar(&maxSurge, "max-surge", "1", "pods allowed above the size during the update (a number or a percentage)")
	f.StringVar(&maxUnavailable, "max-unavailable", "0", "pods of the size allowed to be unavailable during the update (a number or a percentage)")
	f.StringVar(&dryRun, "dry-run", "none", `"client" prints what would be rolled from and to, and changes nothing`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	connection = addClientFlags(cmd)
	return cmd
}

func parseIntOrPercent(flag, v string) (intstr.IntOrString, error) {
	p := intstr.Parse(v)
	if _, err := intstr.GetScaledValueFromIntOrPercent(&p, 100, true); err != nil || (p.Type == intstr.Int && p.IntVal < 0) {
		return p, fmt.Errorf("%s=%s: want a number ≥ 0 or a percentage such as 25%%", flag, v)
	}
	return p, nil
}

// readReplicationController reads the one ReplicationController in file ("-": stdin).
func readReplicationController(file string, stdin io.Reader) (*corev1.ReplicationController, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs [][]byte
	for {
		var raw map[string]any
		if err := decoder.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s is not a valid manifest: %w", file, err)
		}
		if raw == nil {
			continue
		}
		doc, err := jsonOf(raw)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s holds %d objects; it must hold exactly one ReplicationController", file, len(docs))
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(docs[0], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return nil, fmt.Errorf("%s holds a %s (%s), not a ReplicationController", file, gvk.Kind, gvk.GroupVersion())
	}
	return rc, nil
}
