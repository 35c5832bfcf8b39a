package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"

	"github.com/gitsync-dev/gitsync/internal/uninstall"
)

func (o *options) newUninstallCommand() *cobra.Command {
	var opts uninstall.Options
	cmd := &cobra.Command{
		Use:   "uninstall [--dry-run] [--keep-crds]",
		Short: "Remove gitsync (manager, RBAC, its namespace, CRDs) and leave every object it managed in place",
		Long: `Removes gitsync and keeps the workloads it managed:
  1. suspends every Application: not synced, not self-healed, and its finalizer orphans
     instead of pruning (safe even while an operator still runs);
  2. stops the manager (the Deployments/StatefulSets labelled app.kubernetes.io/name=gitsync
     that run as the service account gitsync's ClusterRoleBinding binds; a tenant's
     workload of that label is not touched) and waits for its Pods to end;
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
			_, err = uninstall.Run(cmd.Context(), c, opts)
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be done; change nothing")
	cmd.Flags().BoolVar(&opts.KeepCRDs, "keep-crds", false, "keep the CRDs and gitsync's custom resources (released from their finalizers)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", uninstall.DefaultTimeout, "how long the whole uninstall may take, waiting for the manager's Pods and the CRDs to go included")
	return cmd
}
