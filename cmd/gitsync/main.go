// Command gitsync is the gitsync operator: `gitsync run` against a cluster, `gitsync demo`
// against a local API server and a local Git repository.
package main

import (
	"flag"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	logOpts := zap.Options{}
	root := &cobra.Command{
		Use:           "gitsync",
		Short:         "GitOps operator: keeps a Kubernetes cluster equal to Git",
		SilenceUsage:  true,
		SilenceErrors: false,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Name() != "demo" { // the demo logs to a file of its own
				ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
			}
		},
	}
	logFlags := flag.NewFlagSet("log", flag.ExitOnError)
	logOpts.BindFlags(logFlags)
	root.PersistentFlags().AddGoFlagSet(logFlags)

	root.AddCommand(newRunCommand(), newDemoCommand(&logOpts))
	if err := root.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
