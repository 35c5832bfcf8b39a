package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/renderworker"
)

// newRenderWorkerCommand is `gitsync render-worker`, which the operator starts for its
// render pool (not for people): it bounds itself, then renders what the operator sends
// on fd 3 and answers on fd 4.
func newRenderWorkerCommand() *cobra.Command {
	var b renderworker.Bounds
	limits := helm.Limits{}
	cmd := &cobra.Command{
		Use:    "render-worker",
		Short:  "Render Applications for the operator in a bounded process (started by gitsync run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			helm.SetLimits(limits)
			os.Exit(renderworker.Serve(os.NewFile(3, "requests"), os.NewFile(4, "results"), b))
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&b.Memory, "memory-limit", renderworker.DefaultMemory, "the data segment the worker may use (bytes)")
	f.Int64Var(&b.FileBytes, "max-file-size", renderworker.DefaultFileBytes, "the largest file the worker may write (bytes)")
	f.Uint64Var(&b.OpenFiles, "max-open-files", renderworker.DefaultOpenFiles, "the file descriptors the worker may hold")
	f.DurationVar(&limits.Timeout, "chart-render-timeout", helm.DefaultRenderTimeout, "the most a chart's templates may take")
	f.Int64Var(&limits.MaxDecompressed, "max-chart-decompressed-size", helm.DefaultMaxDecompressed, "the most bytes a chart may hold decompressed")
	return cmd
}
