package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gitsync-dev/gitsync/internal/demo"
)

func newDemoCommand() *cobra.Command {
	o := demo.Options{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local API server and a local Git repository, and sync it (no cluster needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.Out = cmd.OutOrStdout()
			return demo.Run(ctx, o)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "working directory of the demo (kubeconfig, Git repo, checkouts); default: a new temporary directory, removed on exit")
	cmd.Flags().BoolVar(&o.ExitWhenReady, "exit-when-ready", false, "stop as soon as the demo is synced (for scripts and tests)")
	return cmd
}
