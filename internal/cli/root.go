package cli

import (
	"context"
	"errors"
	"fmt"
	gitsyncscheme "github.com/gitsync-dev/gitsync/internal/scheme"
	"io"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Exit codes. Diff uses all three; the other verbs exit 0 or 1.
const (
	ExitOK      = 0
	ExitChanges = 1
	ExitError   = 2
)

// ExitError carries the process exit code of a failed command.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitCodeError) Unwrap() error { return e.Err }

// Streams are where a command reads and writes.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// options are shared by every verb: the kubeconfig flags and the streams.
type options struct {
	Streams
	flags         *genericclioptions.ConfigFlags
	allNamespaces bool
	scheme        *runtime.Scheme
	// conn is the one client of the process (made on first use): a long-running command
	// (gitsync mcp, gitsync ui) reuses it and its RESTMapper for every request.
	conn *connection
}

// connection is a client made once.
type connection struct {
	once sync.Once
	c    client.WithWatch
	err  error
}

// Tool makes a command of another package that reaches the cluster through the CLI's
// kubeconfig flags, as the person running it (`gitsync ui`, `gitsync mcp`): cmd/gitsync
// names them, so that the CLI imports neither.
type Tool func(Kube, Streams) *cobra.Command

// NewRootCommand returns `gitsync` with every CLI verb and tools, with the kubeconfig
// flags; extra adds commands that are not the CLI's (`run`, `demo`).
func NewRootCommand(streams Streams, tools []Tool, extra ...*cobra.Command) *cobra.Command {
	o := &options{Streams: streams, flags: newKubeFlags(), scheme: gitsyncscheme.New(), conn: &connection{}}
	root := &cobra.Command{
		Use:           "gitsync",
		Short:         "GitOps operator: keeps a Kubernetes cluster equal to Git",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A mistyped verb gets cobra's "Did you mean this?".
		SuggestionsMinimumDistance: 2,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	for _, c := range []*cobra.Command{
		o.newGetCommand(), o.newDiffCommand(), o.newBuildCommand(),
		o.newReconcileCommand(), o.newSyncCommand(), o.newSuspendCommand(true), o.newSuspendCommand(false),
		o.newWaitCommand(), o.newHistoryCommand(), o.newEventsCommand(), o.newTreeCommand(),
		o.newRollbackCommand(), o.newVerifyCommand(), o.newLogsCommand(), o.newInstallCommand(), o.newBootstrapCommand(), o.newUninstallCommand(), o.newVersionCommand(),
		o.newPushCommand(),
	} {
		o.addKubeFlags(c)
		root.AddCommand(c)
	}
	for _, tool := range tools {
		c := tool(Kube{o: o}, streams)
		o.addKubeFlags(c)
		root.AddCommand(c)
	}
	options := o.newOptionsCommand()
	o.addKubeFlags(options)
	root.AddCommand(options)
	root.AddCommand(extra...)
	// Usage errors show the usage line and what was probably meant; help lists a
	// command's own flags before the kubeconfig flags (see usage.go).
	checkArgs(root)
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd, err: err}
	})
	return root
}

// newKubeFlags are kubectl's kubeconfig flags (--kubeconfig, --context, -n ...).
func newKubeFlags() *genericclioptions.ConfigFlags { return genericclioptions.NewConfigFlags(true) }

// Execute runs root with args and returns the process exit code; the error, if any, is
// written to root's error stream.
func Execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if cmd == root {
		err = unknownCommand(root, err, args)
	}
	var usage *usageError
	if errors.As(err, &usage) {
		usage.print(root.ErrOrStderr())
		return usageExitCode(usage.cmd)
	}
	var exit *ExitCodeError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(root.ErrOrStderr(), "error:", exit.Err)
		}
		return exit.Code
	}
	fmt.Fprintln(root.ErrOrStderr(), "error:", err)
	if cmd != nil {
		return usageExitCode(cmd)
	}
	return 1
}

// usageExitCode is the exit code of a command line cobra refused: 1, as any error of
// the verbs that exit 0 or 1; ExitError for a verb whose 1 means something else (diff:
// a bad flag or argument is an error (2), never "changes" (1)).
func usageExitCode(cmd *cobra.Command) int {
	if cmd.Annotations[errorExitCodeAnnotation] != "" {
		return ExitError
	}
	return 1
}

// errorExitCodeAnnotation marks a command whose usage errors (caught by cobra before
// RunE) exit with ExitError.
const errorExitCodeAnnotation = "gitsync.dev/usage-errors-exit-2"

// addKubeFlags gives a verb kubectl's kubeconfig flags (--kubeconfig, --context, -n ...).
func (o *options) addKubeFlags(c *cobra.Command) {
	o.flags.AddFlags(c.PersistentFlags())
	_ = c.RegisterFlagCompletionFunc("namespace", o.completeNamespaces)
}

func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// client returns a direct (uncached) client that can also watch.
func (o *options) client() (client.WithWatch, error) {
	o.conn.once.Do(func() {
		cfg, err := o.restConfig()
		if err != nil {
			o.conn.err = err
			return
		}
		if o.conn.c, err = client.NewWithWatch(cfg, client.Options{Scheme: o.scheme}); err != nil {
			o.conn.err = fmt.Errorf("connecting to the cluster: %w", err)
		}
	})
	return o.conn.c, o.conn.err
}

// namespace is -n, else the kubeconfig context's namespace, else "default".
func (o *options) namespace() (string, error) {
	if o.flags.Namespace != nil && *o.flags.Namespace != "" {
		return *o.flags.Namespace, nil
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}
