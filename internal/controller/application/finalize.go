package application

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
)

// finalize prunes the inventory when spec.prune is set (orphans it otherwise), then
// removes the finalizer. Objects the Application's identity may no longer delete (its
// service account or RoleBinding went first, as in a namespace deletion) are orphaned
// with a Warning event naming them, so that a deletion never hangs. Other errors (a
// denying admission policy, a CRD still in use) retry with backoff, MaxDeletionAttempts
// times in all; then what is left is orphaned with the same Warning and the finalizer goes.
func (r *Reconciler) finalize(ctx context.Context, app *gitsyncv1.Application) error {
	if !controllerutil.ContainsFinalizer(app, gitsyncv1.Finalizer) {
		return nil
	}
	r.refreshDone(client.ObjectKeyFromObject(app))
	r.forgetRemote(client.ObjectKeyFromObject(app)) // cluster_drift.go: before the prune
	if r.Desired != nil {
		// Before the prune: its deletions are not drift.
		r.Desired.Forget(ctx, client.ObjectKeyFromObject(app))
	}
	if app.Spec.Prune && !app.Spec.Suspend {
		if entries := inventoryEntries(app); len(entries) > 0 {
			if err := r.pruneOnDeletion(ctx, app, entries); err != nil {
				return err
			}
		}
	}
	patchBase := client.MergeFrom(app.DeepCopy())
	controllerutil.RemoveFinalizer(app, gitsyncv1.Finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, app, patchBase))
}

// pruneOnDeletion deletes entries as the Application's identity. It returns an error
// (to be retried) while failures other than Forbidden or Unauthorized remain and
// attempts are left; at the last attempt those entries are orphaned instead. Entries
// left because a sibling Application cannot be rendered (it might render them: the
// prune fails closed) count as failures, so they are retried and, at the last attempt,
// orphaned with the Warning naming the sibling and its error; entries a sibling renders
// now are left to it, with a Normal event.
func (r *Reconciler) pruneOnDeletion(ctx context.Context, app *gitsyncv1.Application, entries []apply.Entry) error {
	var pruned, orphaned []apply.Change
	var handedOff []apply.Entry
	skips := &pruneSkips{}
	manager, err := r.Applier(app)
	if err == nil {
		var failed, held []apply.Entry
		pruned, orphaned, failed, err = pruneOrOrphan(ctx, manager, apply.Stale(entries, nil), r.pruneOptions(app, skips))
		handedOff, held = skips.split(entries)
		if len(held) > 0 {
			err = errors.Join(err, fmt.Errorf("%d object(s) not pruned while %s", len(held), skips.siblings(held)))
		}
		entries = append(failed, held...)
	}
	if len(pruned) > 0 {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Pruned", "Delete", "%s", changeSummary(nil, pruned))
	}
	if len(orphaned) > 0 {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.OrphanedReason, "Delete",
			"%s may not delete them any more: left in place\n%s",
			impersonate.Identity(app, r.DefaultServiceAccount), changeSummary(nil, orphaned))
	}
	if err == nil {
		r.recordHandOff(app, skips, handedOff)
		return nil
	}
	if !r.recordDeletionAttempt(ctx, app) {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.PruneFailedReason, "Delete", "pruning on deletion: %v", err)
		return fmt.Errorf("pruning on deletion: %w", err)
	}
	r.recordHandOff(app, skips, handedOff)
	r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.OrphanedReason, "Delete",
		"pruning on deletion failed %d times, the last with: %v; left in place\n%s",
		MaxDeletionAttempts, err, changeSummary(nil, orphanedEntries(entries)))
	return nil
}

// recordHandOff emits a Normal event for the objects a deletion left to the sibling
// Application that renders them now.
func (r *Reconciler) recordHandOff(app *gitsyncv1.Application, skips *pruneSkips, handedOff []apply.Entry) {
	if len(handedOff) == 0 {
		return
	}
	r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, HandedOffReason, "Delete",
		"not pruned: %s\n%s", skips.siblings(handedOff), changeSummary(nil, markChanges(handedOff, handedOffAction)))
}

// pruneOrOrphan deletes the entries one by one; those refused as Forbidden or
// Unauthorized (the identity lost its rights, or its service account is gone) come back
// as orphaned (apply.OrphanedAction), other failures as failed, with their errors joined.
func pruneOrOrphan(ctx context.Context, manager *apply.Manager, entries []apply.Entry, opts apply.PruneOptions) (pruned, orphaned []apply.Change, failed []apply.Entry, err error) {
	var errs []error
	for _, e := range entries {
		changes, err := manager.Prune(ctx, []apply.Entry{e}, opts)
		pruned = append(pruned, changes...)
		switch {
		case err == nil:
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			orphaned = append(orphaned, apply.Change{Entry: e, Subject: e.Subject(), Action: apply.OrphanedAction})
		default:
			failed = append(failed, e)
			errs = append(errs, err)
		}
	}
	return pruned, orphaned, failed, errors.Join(errs...)
}

// requestSourceRefresh sets gitsync.dev/requested-at on the source.
func (r *Reconciler) requestSourceRefresh(ctx context.Context, repo client.Object) error {
	patchBase := client.MergeFrom(repo.DeepCopyObject().(client.Object))
	gitsyncv1.RequestReconcile(repo, r.now())
	return client.IgnoreNotFound(r.Patch(ctx, repo, patchBase))
}
