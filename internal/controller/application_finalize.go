package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// finalize prunes the inventory when spec.prune is set (orphans it otherwise), then
// removes the finalizer.
func (r *ApplicationReconciler) finalize(ctx context.Context, app *gitsyncv1.Application) error {
	if !controllerutil.ContainsFinalizer(app, gitsyncv1.Finalizer) {
		return nil
	}
	if r.Drift != nil {
		// Before the prune: its deletions are not drift.
		r.Drift.Forget(ctx, client.ObjectKeyFromObject(app))
	}
	if app.Spec.Prune && !app.Spec.Suspend {
		if entries := inventoryEntries(app); len(entries) > 0 {
			manager, err := r.Applier(app)
			if err != nil {
				return err
			}
			pruned, err := manager.Prune(ctx, apply.Stale(entries, nil), r.pruneOptions(app))
			if err != nil {
				r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.PruneFailedReason, "Delete", "pruning on deletion: %v", err)
				return fmt.Errorf("pruning on deletion: %w", err)
			}
			if len(pruned) > 0 {
				r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Pruned", "Delete", "%s", changeSummary(nil, pruned))
			}
		}
	}
	patchBase := client.MergeFrom(app.DeepCopy())
	controllerutil.RemoveFinalizer(app, gitsyncv1.Finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, app, patchBase))
}

// requestSourceRefresh sets gitsync.dev/requested-at on the source.
func (r *ApplicationReconciler) requestSourceRefresh(ctx context.Context, repo *gitsyncv1.GitRepository) error {
	patchBase := client.MergeFrom(repo.DeepCopy())
	if repo.Annotations == nil {
		repo.Annotations = map[string]string{}
	}
	repo.Annotations[gitsyncv1.RequestedAtAnnotation] = r.now().UTC().Format(time.RFC3339Nano)
	return client.IgnoreNotFound(r.Patch(ctx, repo, patchBase))
}
