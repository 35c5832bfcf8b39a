package main

import (
	"io"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitsync-dev/gitsync/internal/demo"
)

func newDemoCommand(logOpts *zap.Options) *cobra.Command {
	o := demo.Options{
		// The operator's logs go to a file, so that the terminal shows the demo.
		Logger:        func(w io.Writer) logr.Logger { return zap.New(zap.UseFlagOptions(logOpts), zap.WriteTo(w)) },
		RenderWorkers: true,
	}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local API server and a local Git repository, and sync it (no cluster needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			// Every way of stopping the demo (Ctrl-C, SIGTERM to it or to its process
			// group, SIGHUP) cleans up and exits 0.
			ctx, stop := demo.WithStopSignals(cmd.Context(), o.Out)
			defer stop()
			if exe, err := os.Executable(); err == nil {
				o.Binary = exe // the CLI lines it prints use this very binary
			}
			return demo.Run(ctx, o)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "working directory of the demo (kubeconfig, Git repo, checkouts); default: a new temporary directory, removed on exit")
	cmd.Flags().BoolVar(&o.ExitWhenReady, "exit-when-ready", false, "stop as soon as the demo is synced (for scripts and tests)")
	return cmd
}
