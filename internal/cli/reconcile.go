package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

type reconcileOptions struct {
	*options
	withSource bool
	// hooks asks the Application's sync to run its hooks again (gitsync.dev/run-hooks).
	hooks bool
	// prune, when set, overrides spec.prune for the requested sync (gitsync.dev/sync-prune).
	prune   *bool
	timeout time.Duration
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
	return cmd
}

// addFlags adds the flags of a sync request (reconcile and its alias sync share them).
func (r *reconcileOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&r.withSource, "with-source", false, "reconcile the Application's source first, so that a new commit (GitRepository) or chart version (HelmRepository) is fetched")
	cmd.Flags().BoolVar(&r.hooks, "hooks", false, "run the Application's hooks again (without it, hooks run once per revision)")
	cmd.Flags().Bool("prune", false, "--prune=true prunes what left Git in this sync even when spec.prune is false; --prune=false keeps it this once (default: spec.prune)")
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
// first), waits for the outcome and prints it.
func (r *reconcileOptions) reconcileObject(ctx context.Context, c client.WithWatch, k kind, key client.ObjectKey) error {
	ns := key.Namespace
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	// The history before the request: what the request did is what is newer.
	var before []gitsyncv1.SyncHistoryEntry
	app := &gitsyncv1.Application{}
	if k == kindApp {
		if err := c.Get(ctx, key, app); err != nil {
			return notFoundOr(err, kindApp, ns, key.Name)
		}
		before = app.Status.History
	}
	if k == kindApp && r.withSource {
		srcKey := render.SourceKey(app)
		srcKind := sourceKind(app)
		indexBefore := helmIndex(ctx, c, srcKind, srcKey)
		src, err := r.reconcile(ctx, c, srcKind, srcKey)
		if err != nil {
			return err
		}
		r.printOutcome(src, srcKind, srcKey, nil)
		// The controller reads the source from its cache, which may not hold the new
		// artifact yet when it handles the request: ask again (a few times at most)
		// until the Application has handled the source's revision. A HelmRepository's
		// artifact is its index, and the chart version it selects the Application's
		// revision: with a new index, ask again while that revision did not move.
		handled := func(*gitsyncv1.Application) bool { return true }
		switch s := src.(type) {
		case *gitsyncv1.GitRepository:
			if s.Status.Artifact != nil {
				want := s.Status.Artifact.Revision
				handled = func(a *gitsyncv1.Application) bool { return a.Status.LastAttemptedRevision == want }
			}
		case *gitsyncv1.HelmRepository:
			if s.Status.Artifact != nil && s.Status.Artifact.Digest != indexBefore {
				before := app.Status.LastAttemptedRevision
				handled = func(a *gitsyncv1.Application) bool { return a.Status.LastAttemptedRevision != before }
			}
		}
		for i := 0; ; i++ {
			obj, err := r.reconcile(ctx, c, kindApp, key)
			if err != nil {
				return err
			}
			if handled(obj.(*gitsyncv1.Application)) || i == 2 {
				r.printOutcome(obj, kindApp, key, before)
				return nil
			}
		}
	}
	obj, err := r.reconcile(ctx, c, k, key)
	if err != nil {
		return err
	}
	r.printOutcome(obj, k, key, before)
	return nil
}

// helmIndex is the digest of the index of a HelmRepository source now ("" for a
// GitRepository, or when it cannot be read).
func helmIndex(ctx context.Context, c client.Client, k kind, key client.ObjectKey) string {
	repo := &gitsyncv1.HelmRepository{}
	if k != kindHelmRepo || c.Get(ctx, key, repo) != nil || repo.Status.Artifact == nil {
		return ""
	}
	return repo.Status.Artifact.Digest
}

// reconcile requests a reconcile of one object, waits for it to be handled and fails
// when it failed.
func (r *reconcileOptions) reconcile(ctx context.Context, c client.WithWatch, k kind, key client.ObjectKey) (client.Object, error) {
	obj := k.newObject()
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, notFoundOr(err, k, key.Namespace, key.Name)
	}
	if suspended(obj) {
		return nil, fmt.Errorf("%s %s is suspended: resume it first (gitsync resume %s %s -n %s)", k.kindName(), key, k, key.Name, key.Namespace)
	}
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	base := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[gitsyncv1.RequestedAtAnnotation] = requested
	if r.hooks && k == kindApp {
		ann[gitsyncv1.RunHooksAnnotation] = requested
	}
	if r.prune != nil && k == kindApp {
		ann[gitsyncv1.SyncPruneAnnotation] = gitsyncv1.PruneRequest(*r.prune, requested)
	}
	obj.SetAnnotations(ann)
	if err := c.Patch(ctx, obj, base); err != nil {
		return nil, fmt.Errorf("requesting a reconcile of %s %s: %w", k.kindName(), key, err)
	}
	fmt.Fprintf(r.Out, "► reconcile of %s %s requested\n", k.kindName(), key)
	obj, err := waitFor(ctx, c, k, key, func(o client.Object) (bool, error) {
		return handledAt(o) == requested, nil
	})
	if err != nil {
		return nil, err
	}
	if app, ok := obj.(*gitsyncv1.Application); ok && app.Status.SyncProgress != nil {
		// The sync took the request and waits (for a hook or a wave) between
		// reconciles: its outcome comes when it ends.
		fmt.Fprintf(r.Out, "◎ waiting for the sync: %s\n", conditionMessage(app, gitsyncv1.ReconcilingCondition))
		if obj, err = waitFor(ctx, c, k, key, func(o client.Object) (bool, error) {
			return o.(*gitsyncv1.Application).Status.SyncProgress == nil, nil
		}); err != nil {
			return nil, err
		}
	}
	ready := apimeta.FindStatusCondition(conditionsOf(obj), gitsyncv1.ReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionFalse {
		return nil, fmt.Errorf("%s %s failed: %s: %s", k.kindName(), key, ready.Reason, ready.Message)
	}
	return obj, nil
}

// printOutcome says what the reconcile did: the revision, and for an Application what
// this request's sync did (the counts of the history entry newer than before, the
// history before the request), or that it changed nothing, and its health.
func (r *reconcileOptions) printOutcome(obj client.Object, k kind, key client.ObjectKey, before []gitsyncv1.SyncHistoryEntry) {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		rev := "-"
		if o.Status.Artifact != nil {
			rev = o.Status.Artifact.Revision
		}
		fmt.Fprintf(r.Out, "✔ %s %s: revision %s\n", k.kindName(), key, rev)
	case *gitsyncv1.HelmRepository:
		rev := "-"
		if o.Status.Artifact != nil {
			rev = o.Status.Artifact.Revision
		}
		fmt.Fprintf(r.Out, "✔ %s %s: index %s\n", k.kindName(), key, rev)
	case *gitsyncv1.Application:
		if h := newSyncs(o.Status.History, before); len(h) > 0 {
			fmt.Fprintf(r.Out, "✔ %s %s: applied revision %s (%d created, %d configured, %d unchanged, %d pruned)",
				k.kindName(), key, h[0].Revision, h[0].Created, h[0].Configured, h[0].Unchanged, h[0].Pruned)
		} else {
			// A sync that changed nothing writes no history entry.
			fmt.Fprintf(r.Out, "✔ %s %s: up to date, no changes (applied revision %s)", k.kindName(), key, o.Status.LastAppliedRevision)
		}
		if o.Status.Health != nil {
			fmt.Fprintf(r.Out, ", health %s", o.Status.Health.Status)
		}
		fmt.Fprintln(r.Out)
	}
}

// newSyncs are the entries of history newer than the newest of before (history read
// before a request), newest first: the syncs that ran since.
func newSyncs(history, before []gitsyncv1.SyncHistoryEntry) []gitsyncv1.SyncHistoryEntry {
	if len(before) == 0 {
		return history
	}
	last := before[0]
	for i, h := range history {
		if h.Revision == last.Revision && h.Result == last.Result && h.StartedAt.Equal(&last.StartedAt) {
			return history[:i]
		}
	}
	return history
}

func handledAt(obj client.Object) string {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		return o.Status.LastHandledReconcileAt
	case *gitsyncv1.HelmRepository:
		return o.Status.LastHandledReconcileAt
	case *gitsyncv1.Application:
		return o.Status.LastHandledReconcileAt
	}
	return ""
}

func suspended(obj client.Object) bool {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		return o.Spec.Suspend
	case *gitsyncv1.HelmRepository:
		return o.Spec.Suspend
	case *gitsyncv1.Application:
		return o.Spec.Suspend
	}
	return false
}

// newSuspendCommand is `suspend` (suspend true) or `resume`.
func (o *options) newSuspendCommand(suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a suspended GitRepository, HelmRepository or Application (and clear an Application's rollback pin)"
	if suspend {
		verb, short = "suspend", "Suspend a GitRepository, HelmRepository or Application: nothing is fetched, synced or corrected until resume"
	}
	return &cobra.Command{
		Use:               verb + " source|helmrepo|app NAME",
		Short:             short,
		Example:           fmt.Sprintf("  gitsync %s app web\n  gitsync %s source app-repo\n  gitsync %s source git app-repo     # Flux's form is read too", verb, verb, verb),
		Args:              objectArgsCount,
		ValidArgsFunction: o.completeKindAndName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setSuspend(cmd.Context(), args, suspend)
		},
	}
}

func (o *options) setSuspend(ctx context.Context, args []string, suspend bool) error {
	verb := "resume"
	if suspend {
		verb = "suspend"
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
// requests a reconcile) and prints the new state.
func (o *options) patchSuspend(ctx context.Context, c client.Client, k kind, key client.ObjectKey, suspend bool) error {
	obj := k.newObject()
	if err := c.Get(ctx, key, obj); err != nil {
		return notFoundOr(err, k, key.Namespace, key.Name)
	}
	base := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	switch t := obj.(type) {
	case *gitsyncv1.GitRepository:
		t.Spec.Suspend = suspend
	case *gitsyncv1.HelmRepository:
		t.Spec.Suspend = suspend
	case *gitsyncv1.Application:
		t.Spec.Suspend = suspend
		if !suspend {
			t.Spec.PinnedRevision = "" // resume also ends a rollback
		}
	}
	if !suspend {
		// Resuming reconciles at once.
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[gitsyncv1.RequestedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		obj.SetAnnotations(ann)
	}
	if err := c.Patch(ctx, obj, base); err != nil {
		return fmt.Errorf("patching %s %s: %w", k.kindName(), key, err)
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
		Use:               "sync app NAME",
		Short:             "Argo CD's habit: the same as `gitsync reconcile app NAME`",
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

// conditionMessage is the message of the Application's condition t ("" without it).
func conditionMessage(app *gitsyncv1.Application, t string) string {
	if c := apimeta.FindStatusCondition(app.Status.Conditions, t); c != nil {
		return c.Message
	}
	return ""
}
