package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

type reconcileOptions struct {
	*options
	withSource bool
	// hooks asks the Application's sync to run its hooks again (gitsync.dev/run-hooks).
	hooks bool
	// prune, when set, overrides spec.prune for the requested sync (gitsync.dev/sync-prune).
	prune *bool
	// resources makes an Application's sync a selective one (gitsync.dev/sync-resources).
	resources []string
	timeout   time.Duration
}

func (o *options) newReconcileCommand() *cobra.Command {
	r := &reconcileOptions{options: o}
	cmd := &cobra.Command{
		Use:   "reconcile source|helmrepo|app NAME [--with-source]",
		Short: "Reconcile now (sets gitsync.dev/requested-at), wait until it is handled and print the outcome",
		Example: `  gitsync reconcile app web --with-source
  gitsync reconcile source app-repo
  gitsync reconcile helmrepo podinfo
  gitsync reconcile source git app-repo     # Flux's form is read too`,
		Args:              objectArgsCount,
		ValidArgsFunction: o.completeKindAndName,
		RunE: func(cmd *cobra.Command, args []string) error {
			r.readFlags(cmd)
			return r.run(cmd.Context(), args)
		},
	}
	r.addFlags(cmd)
	cmd.AddCommand(o.newReconcileImageCommand())
	return cmd
}

// addFlags adds the flags of a sync request (reconcile and its alias sync share them).
func (r *reconcileOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&r.withSource, "with-source", false, "reconcile the Application's source first, so that a new commit (GitRepository) or chart version (HelmRepository) is fetched")
	cmd.Flags().BoolVar(&r.hooks, "hooks", false, "run the Application's hooks again (without it, hooks run once per revision)")
	cmd.Flags().Bool("prune", false, "--prune=true prunes what left Git in this sync even when spec.prune is false; --prune=false keeps it this once (default: spec.prune)")
	cmd.Flags().StringArrayVar(&r.resources, "resource", nil, "sync only this object of the revision, [GROUP/]KIND[/NAMESPACE]/NAME (repeatable): the whole revision is dry-run, only these are applied, nothing is pruned, and the Application stays OutOfSync for the rest")
	cmd.Flags().DurationVar(&r.timeout, "timeout", 5*time.Minute, "how long to wait for the outcome")
}

// readFlags reads what addFlags cannot bind: --prune only when given.
func (r *reconcileOptions) readFlags(cmd *cobra.Command) {
	if cmd.Flags().Changed("prune") {
		prune, _ := cmd.Flags().GetBool("prune")
		r.prune = &prune
	}
}

func (r *reconcileOptions) run(ctx context.Context, args []string) error {
	k, name, err := r.objectArgs("reconcile", args)
	if err != nil {
		return err
	}
	if len(r.resources) > 0 && k != kindApp {
		return fmt.Errorf("--resource selects objects of an Application: gitsync sync app NAME --resource KIND/NAME")
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	ns, err := r.namespace()
	if err != nil {
		return err
	}
	return r.reconcileObject(ctx, c, k, client.ObjectKey{Namespace: ns, Name: name})
}

// reconcileObject requests a reconcile of key (with --with-source, of its source
// first), waits for the outcome and prints each step (operations.Reconcile).
func (r *reconcileOptions) reconcileObject(ctx context.Context, c client.WithWatch, k kind, key client.ObjectKey) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return operations.Reconcile(ctx, c, operations.Kind(k), key,
		operations.SyncOptions{WithSource: r.withSource, Hooks: r.hooks, Prune: r.prune, Resources: r.resources}, r.printStep)
}

// printStep prints one step of a reconcile as a line.
func (o *options) printStep(s operations.Step) { fmt.Fprintln(o.Out, s.String()) }

// newSuspendCommand is `suspend` (suspend true) or `resume`.
func (o *options) newSuspendCommand(suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a suspended GitRepository, HelmRepository or Application (and clear an Application's rollback pin), or continue an ApplicationSet's halted rollout"
	if suspend {
		verb, short = "suspend", "Suspend a GitRepository, HelmRepository or Application: nothing is fetched, synced or corrected until resume"
	}
	return &cobra.Command{
		Use:               verb + " source|helmrepo|app NAME",
		Short:             short,
		Example:           suspendExample(verb),
		Args:              objectArgsCount,
		ValidArgsFunction: o.completeKindAndName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setSuspend(cmd.Context(), args, suspend)
		},
	}
}

func suspendExample(verb string) string {
	ex := fmt.Sprintf("  gitsync %s app web\n  gitsync %s source app-repo\n  gitsync %s source git app-repo     # Flux's form is read too", verb, verb, verb)
	if verb == "resume" {
		ex += "\n  gitsync resume appset fleet      # continue an ApplicationSet's halted rollout"
	}
	return ex
}

func (o *options) setSuspend(ctx context.Context, args []string, suspend bool) error {
	verb := "resume"
	if suspend {
		verb = "suspend"
	}
	if len(args) == 2 && isAppSet(args[0]) {
		if suspend {
			return fmt.Errorf("suspend works on source, helmrepo and app (an ApplicationSet has spec.suspend)")
		}
		return o.resumeAppSet(ctx, args[1]) // continues a halted rollout
	}
	k, name, err := o.objectArgs(verb, args)
	if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	return o.patchSuspend(ctx, c, k, client.ObjectKey{Namespace: ns, Name: name}, suspend)
}

// patchSuspend sets spec.suspend of key (resume also clears an Application's pin and
// requests a reconcile: operations.SetSuspend) and prints the new state.
func (o *options) patchSuspend(ctx context.Context, c client.Client, k kind, key client.ObjectKey, suspend bool) error {
	if _, err := operations.SetSuspend(ctx, c, operations.Kind(k), key, suspend); err != nil {
		return err
	}
	state := "suspended"
	if !suspend {
		state = "resumed"
	}
	fmt.Fprintf(o.Out, "%s %s %s\n", k.kindName(), key, state)
	return nil
}

// newSyncCommand is Argo CD's `sync`: `gitsync sync app NAME` is `gitsync reconcile app
// NAME`, and says so.
func (o *options) newSyncCommand() *cobra.Command {
	r := &reconcileOptions{options: o}
	cmd := &cobra.Command{
		Use:   "sync app NAME",
		Short: "Argo CD's habit: the same as `gitsync reconcile app NAME`",
		Example: `  gitsync sync app web
  gitsync sync app web --resource apps/Deployment/web --resource ConfigMap/team-a/settings`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if k, err := parseKind(args[0]); err != nil || k != kindApp {
				return fmt.Errorf("sync works on apps: gitsync sync app NAME (or gitsync reconcile source NAME)")
			}
			fmt.Fprintf(o.ErrOut, "(gitsync's form: gitsync reconcile app %s)\n", args[1])
			r.readFlags(cmd)
			return r.run(cmd.Context(), args)
		},
	}
	r.addFlags(cmd)
	return cmd
}
