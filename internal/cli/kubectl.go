package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/cmd/annotate"
	"k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/cmd/attach"
	"k8s.io/kubectl/pkg/cmd/autoscale"
	"k8s.io/kubectl/pkg/cmd/cp"
	"k8s.io/kubectl/pkg/cmd/create"
	"k8s.io/kubectl/pkg/cmd/delete"
	"k8s.io/kubectl/pkg/cmd/describe"
	"k8s.io/kubectl/pkg/cmd/edit"
	kexec "k8s.io/kubectl/pkg/cmd/exec"
	"k8s.io/kubectl/pkg/cmd/get"
	"k8s.io/kubectl/pkg/cmd/label"
	"k8s.io/kubectl/pkg/cmd/logs"
	"k8s.io/kubectl/pkg/cmd/patch"
	"k8s.io/kubectl/pkg/cmd/portforward"
	"k8s.io/kubectl/pkg/cmd/rollout"
	"k8s.io/kubectl/pkg/cmd/scale"
	"k8s.io/kubectl/pkg/cmd/set"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// kubectlVerbs are the verbs kroll takes from kubectl as they are: kubectl's own command
// code, so flags, output and errors are kubectl's. `rollout` is kubectl's too, with
// kroll's status in place of kubectl's and verbs kubectl lacks added (rollout.go).
type kubectlVerbs struct {
	config  *genericclioptions.ConfigFlags
	factory cmdutil.Factory
	streams genericiooptions.IOStreams
}

func newKubectlVerbs(stdin io.Reader, stdout, stderr io.Writer) *kubectlVerbs {
	config := genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithDiscoveryBurst(300).WithDiscoveryQPS(50)
	return &kubectlVerbs{
		config:  config,
		factory: cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(config)),
		streams: genericiooptions.IOStreams{In: stdin, Out: stdout, ErrOut: stderr},
	}
}

// commands builds the verbs. Each carries kubectl's connection flags (--kubeconfig,
// --context, -n, …) as its own persistent flags rather than kroll's root's, so that
// `kroll up --help` is not cluttered with them.
func (k *kubectlVerbs) commands() []*cobra.Command {
	f, s := k.factory, k.streams
	cmds := []*cobra.Command{
		get.NewCmdGet("kroll", f, s),
		describe.NewCmdDescribe("kroll", f, s),
		apply.NewCmdApply("kroll", f, s),
		create.NewCmdCreate(f, s),
		delete.NewCmdDelete(f, s),
		edit.NewCmdEdit(f, s),
		patch.NewCmdPatch(f, s),
		label.NewCmdLabel(f, s),
		annotate.NewCmdAnnotate("kroll", f, s),
		scale.NewCmdScale(f, s),
		autoscale.NewCmdAutoscale(f, s),
		set.NewCmdSet(f, s),
		k.rollout(rollout.NewCmdRollout("kroll", f, s)),
		k.newStatusCommand(),
		k.newDashboardCommand(),
		// Through the simulated nodes' kubelet API.
		logs.NewCmdLogs(f, s),
		kexec.NewCmdExec(f, s),
		attach.NewCmdAttach(f, s),
		portforward.NewCmdPortForward(f, s),
		cp.NewCmdCp(f, s),
	}
	for _, c := range cmds {
		k.config.AddFlags(c.PersistentFlags())
		c.PersistentPreRun = func(*cobra.Command, []string) { k.prepare() }
		c.Example = strings.ReplaceAll(c.Example, "kubectl ", "kroll ")
		for _, sub := range c.Commands() {
			sub.Example = strings.ReplaceAll(sub.Example, "kubectl ", "kroll ")
		}
	}
	return cmds
}

// prepare runs before any kubectl verb: the kubeconfig as kroll resolves it, and API
// warnings printed the way kubectl prints them.
func (k *kubectlVerbs) prepare() {
	resolveKubeconfig(k.config)
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(k.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true}))
}

// kubectlExit is how kubectl's fatal-error path (cmdutil.CheckErr) returns to Main
// instead of calling os.Exit: it has printed its message already.
type kubectlExit struct{ code int }

// catchKubectlExits makes kubectl's fatal errors print msg, as kubectl does, and unwind
// to Main with the code, so kroll's process ends the way kubectl's would.
func catchKubectlExits(stderr io.Writer) {
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		if msg != "" {
			if !strings.HasSuffix(msg, "\n") {
				msg += "\n"
			}
			fmt.Fprint(stderr, msg)
		}
		panic(kubectlExit{code: code})
	})
}

// resolveKubeconfig picks the kubeconfig as kroll documents it: --kubeconfig, then
// $KUBECONFIG, then the kubeconfig of a `kroll up` running in ./.kroll, then
// ~/.kube/config (client-go's default).
func resolveKubeconfig(config *genericclioptions.ConfigFlags) {
	if *config.KubeConfig != "" || os.Getenv("KUBECONFIG") != "" {
		return
	}
	if _, err := os.Stat(krollUpKubeconfig); err == nil {
		*config.KubeConfig = krollUpKubeconfig
	}
}
