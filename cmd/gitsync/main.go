// Command gitsync is the gitsync operator and its CLI: `gitsync run` against a cluster,
// `gitsync demo` against a local API server and a local Git repository, and the verbs of
// internal/cli (get, diff, build, reconcile, ...).
package main

import (
	"flag"
	"os"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitsync-dev/gitsync/internal/cli"
	"github.com/gitsync-dev/gitsync/internal/mcp"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

func main() {
	root := newRoot(cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	os.Exit(cli.Execute(ctrl.SetupSignalHandler(), root, os.Args[1:]))
}

// logTimeLayout is the operator's log timestamps: RFC 3339 with milliseconds (the local
// zone, as before).
const logTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// tools are the people's tools besides the CLI's verbs, reaching the cluster through its
// kubeconfig flags: the web UI and the MCP server.
var tools = []cli.Tool{
	func(k cli.Kube, s cli.Streams) *cobra.Command { return ui.NewCommand(k, s.Out) },
	func(k cli.Kube, s cli.Streams) *cobra.Command {
		return mcp.NewCommand(k, s.In, s.Out, s.ErrOut, k.Version())
	},
}

// newRoot is the whole command tree: internal/cli's verbs, ui and mcp, and run, demo
// and render-worker.
func newRoot(streams cli.Streams) *cobra.Command {
	logOpts, logFlags := newLogFlags(streams)
	run, demo := newRunCommand(), newDemoCommand(logOpts)
	// The operator's log flags belong to the commands that run it.
	for _, c := range []*cobra.Command{run, demo} {
		c.Flags().AddGoFlagSet(logFlags)
	}
	root := cli.NewRootCommand(streams, tools, run, demo, newRenderWorkerCommand())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Name() != "demo" { // the demo logs to a file of its own
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(logOpts)))
		}
		if cmd == run || cmd == demo {
			listThenWatch()
		}
		if cmd == run {
			return servePprof() // opt-in: $GITSYNC_PPROF_ADDRESS
		}
		return nil
	}
	return root
}

// newLogFlags are the operator's log options, written to streams.ErrOut, and the flags
// (--zap-*) that change them.
func newLogFlags(streams cli.Streams) (*zap.Options, *flag.FlagSet) {
	opts := &zap.Options{
		// Milliseconds (controller-runtime's default, RFC 3339, has whole seconds only,
		// too coarse to time a sync from the log); --zap-time-encoding overrides it.
		TimeEncoder: zapcore.TimeEncoderOfLayout(logTimeLayout),
		DestWriter:  streams.ErrOut,
	}
	fs := flag.NewFlagSet("log", flag.ExitOnError)
	opts.BindFlags(fs)
	return opts, fs
}
