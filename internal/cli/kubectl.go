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
	// kubeconfig is the command's kubeconfig, resolved once.
	kubeconfig kubeconfigChoice
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
		k.cp(cp.NewCmdCp(f, s)),
	}
	for _, c := range cmds {
		k.config.AddFlags(c.PersistentFlags())
		c.PersistentPreRunE = func(*cobra.Command, []string) error { return k.prepare() }
		c.Example = strings.ReplaceAll(c.Example, "kubectl ", "kroll ")
		for _, sub := range c.Commands() {
			sub.Example = strings.ReplaceAll(sub.Example, "kubectl ", "kroll ")
		}
	}
	return cmds
}

// prepare runs before any kubectl verb: the kubeconfig as kroll resolves it, and API
// warnings printed the way kubectl prints them.
func (k *kubectlVerbs) prepare() error {
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(k.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true}))
	return k.kubeconfig.resolve(k.config, k.streams.ErrOut)
}

// cp is kubectl's cp, whose fatal errors end the process at once: kubectl cp checks its
// exec's error on a goroutine of its own (cmdutil.CheckErr in its tar pipe, e.g.
// "command terminated with exit code 2" when tar finds no such file), where no panic
// can reach Main: a panic there would crash kroll with a trace. Ending the process
// there is what kubectl does; whether that exit status or the copy (which reads tar's
// empty archive and ends with 0) comes first is kubectl's own race
// (kubernetes/kubectl#980).
func (k *kubectlVerbs) cp(c *cobra.Command) *cobra.Command {
	c.PreRun = func(*cobra.Command, []string) {
		cmdutil.BehaviorOnFatal(func(msg string, code int) {
			printFatal(k.streams.ErrOut, msg)
			os.Exit(code)
		})
	}
	return c
}

// kubectlExit is how kubectl's fatal-error path (cmdutil.CheckErr) returns to Main
// instead of calling os.Exit: it has printed its message already.
type kubectlExit struct{ code int }

// catchKubectlExits makes kubectl's fatal errors print msg, as kubectl does, and unwind
// to Main with the code, so kroll's process ends the way kubectl's would.
func catchKubectlExits(stderr io.Writer) {
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		printFatal(stderr, msg)
		panic(kubectlExit{code: code})
	})
}

// printFatal prints a kubectl fatal error's message as kubectl does.
func printFatal(stderr io.Writer, msg string) {
	if msg != "" {
		if !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		fmt.Fprint(stderr, msg)
	}
}
