package application

import (
	"context"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// DeletionAttemptsAnnotation counts, on an Application being deleted, the prunes on
// deletion that failed with an error other than Forbidden or Unauthorized (a denying
// admission policy, a CRD that still has instances, a conflict). Kept on the object, so
// the count survives a restart of the operator and a person can see it.
const DeletionAttemptsAnnotation = "gitsync.dev/deletion-attempts"

// MaxDeletionAttempts bounds those failed attempts: the last one orphans what is left
// (with a Warning event naming it) and releases the finalizer, so that a deletion never
// retries forever. Retries back off as every failed reconcile does (1 s doubling, up to
// 5 min): eight attempts span about four minutes.
const MaxDeletionAttempts = 8

// deletionAttempts is the number of failed attempts recorded on app.
func deletionAttempts(app *gitsyncv1.Application) int {
	n, err := strconv.Atoi(app.GetAnnotations()[DeletionAttemptsAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// recordDeletionAttempt writes one more failed attempt on app and reports whether it
// was the last one allowed. A failed write counts anyway: the bound is kept in memory
// for this reconcile, and the next one reads what was stored.
func (r *Reconciler) recordDeletionAttempt(ctx context.Context, app *gitsyncv1.Application) (last bool) {
	n := deletionAttempts(app) + 1
	if n >= MaxDeletionAttempts {
		return true
	}
	patchBase := client.MergeFrom(app.DeepCopy())
	annotations := app.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DeletionAttemptsAnnotation] = strconv.Itoa(n)
	app.SetAnnotations(annotations)
	_ = r.Patch(ctx, app, patchBase) // best effort: a lost count costs one more attempt
	return false
}

// orphanedEntries marks entries as orphaned changes (what a bounded deletion leaves).
func orphanedEntries(entries []apply.Entry) []apply.Change {
	out := make([]apply.Change, 0, len(entries))
	for _, e := range entries {
		out = append(out, apply.Change{Entry: e, Subject: e.Subject(), Action: apply.OrphanedAction})
	}
	return out
}
