package application

import (
	"context"
	"os"

	"github.com/fluxcd/pkg/runtime/conditions"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// reconcileRestore gives drift protection back after a restart, before anything else can
// fail: when the drift controller holds no desired state for the Application but status
// records a last applied revision whose checkout is in storage, that revision is rendered
// again and registered (Drift.Applied), provided it yields exactly the recorded inventory
// (the spec may have changed since). A newer revision that then fails to sync leaves the
// cluster protected at the last applied one. Sets no condition; failures only log.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *syncRun) outcome {
	app := s.app
	key := client.ObjectKeyFromObject(app)
	if r.Desired == nil || isRemote(app) || app.Status.LastAppliedRevision == "" || r.Desired.Tracked(key) {
		return done()
	}
	var res *render.Result
	var err error
	if app.MultiSource() { // every source at its revision of the last applied one
		parts, ok := r.partsAt(ctx, app, app.Status.LastAppliedRevision)
		if !ok || r.checkAccess(app) != nil {
			return done()
		}
		run := &syncRun{parts: parts}
		defer run.acquireParts(r.Storage)()
		values, _ := r.valuesSourcesOf(ctx, app)
		res, err = r.renderParts(ctx, parts, values.roots)
	} else {
		dir, ok := r.lastAppliedAtHand(ctx, app)
		if !ok {
			return done()
		}
		release := r.Storage.Acquire(dir)
		defer release()
		res, err = r.render(ctx, dir, app)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("revision", app.Status.LastAppliedRevision)
	var objs []*unstructured.Unstructured
	if err == nil {
		objs, err = render.MainSet(res.Objects) // hooks are not tracked for drift
	}
	if err != nil {
		log.V(1).Info("last applied revision does not render again; drift protection waits for a sync", "error", err.Error())
		return done()
	}
	if !sameInventory(objs, inventoryEntries(app)) {
		log.V(1).Info("last applied revision renders another inventory; drift protection waits for a sync")
		return done()
	}
	if err := r.Desired.Applied(ctx, key, res.Chart.Watched(objs)); err != nil {
		log.Error(err, "starting drift watches")
	}
	if !conditions.IsReady(app) || app.Status.LastAttemptedRevision != app.Status.LastAppliedRevision {
		r.Desired.Unsure(key) // a later attempt may have written part of its revision
	}
	s.restored = true
	return done()
}

// lastAppliedAtHand is where the last applied revision is in storage: its checkout, or
// for a HelmRepository source its chart archive; false when storage does not hold it,
// or when the Application's references are refused (nothing of its source is read).
func (r *Reconciler) lastAppliedAtHand(ctx context.Context, app *gitsyncv1.Application) (string, bool) {
	if r.checkAccess(app) != nil {
		return "", false
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		return r.cachedChart(ctx, app, app.Status.LastAppliedRevision)
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.OCIRepositoryKind {
		return r.ociCheckout(ctx, app, app.Status.LastAppliedRevision)
	}
	commit := source.CommitOf(app.Status.LastAppliedRevision)
	if commit == "" {
		return "", false
	}
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, sourceid.Key(app), repo); err != nil {
		return "", false // reconcileSource reports it
	}
	dir := sourceid.CheckoutDir(r.Storage, repo, commit)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	return dir, true
}

// sameInventory tells whether objs are exactly the inventory's objects.
func sameInventory(objs []*unstructured.Unstructured, entries []apply.Entry) bool {
	if len(objs) != len(entries) {
		return false
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		ids[e.ID] = true
	}
	for _, o := range objs {
		if !ids[apply.EntryOf(o).ID] {
			return false
		}
	}
	return true
}
