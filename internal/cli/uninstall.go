package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"

	"github.com/gitsync-dev/gitsync/internal/uninstall"
)

func (o *options) newUninstallCommand() *cobra.Command {
	var opts uninstall.Options
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "uninstall [--dry-run] [--keep-crds]",
		Short: "Remove gitsync (manager, RBAC, its namespace, CRDs) and leave every object it managed in place",
		Long: `Removes gitsync and keeps the workloads it managed:
  1. suspends every Application: not synced, not self-healed, and its finalizer orphans
     instead of pruning (safe even while an operator still runs);
  2. stops the manager (its Deployments/StatefulSets labelled app.kubernetes.io/name=gitsync)
     and waits for its Pods to end;
  3. removes gitsync's finalizers from Applications (and any other gitsync kind);
  4. deletes the CRDs, and with them every GitRepository, Application, ... (with
     --keep-crds they stay, and the Applications are resumed as they were);
  5. deletes the rest of gitsync's install: RBAC, Service, and its namespace unless that
     holds objects gitsync managed.
Managed objects keep their gitsync.dev/application labels; a later install or bootstrap
takes them over in place.`,
		Example: `  gitsync uninstall --dry-run
  gitsync uninstall`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			cfg, err := o.restConfig()
			if err != nil {
				return err
			}
			if opts.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
				return err
			}
			opts.Out = o.Out
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_, err = uninstall.Run(ctx, c, opts)
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be done; change nothing")
	cmd.Flags().BoolVar(&opts.KeepCRDs, "keep-crds", false, "keep the CRDs and gitsync's custom resources (released from their finalizers)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the manager's Pods and the CRDs to go")
	return cmd
}
