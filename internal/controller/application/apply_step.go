package application

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/applier"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// reconcileApply dry-runs then applies the objects (nothing is applied if any is
// rejected). Refuses an empty render that would prune everything unless allowEmpty.
// Sets Ready=False/ApplyFailed or PruneFailed on failure.
func (r *Reconciler) reconcileApply(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	previous := s.previous
	if render.RefusesEmpty(app, len(s.objects), len(previous)) {
		return r.stalledRevision(s, gitsyncv1.PruneFailedReason, fmt.Sprintf(
			"%s rendered no objects at %s: refusing to prune all %d objects (set allowEmpty: true to allow it)",
			pathOf(app), s.revision, len(previous)))
	}
	// Each apply (routine resyncs stop before it) says which limits it runs under.
	_, n1 := r.Caps.Timeout("spec.timeout", app.GetTimeout().Duration)
	_, n2 := r.Caps.Interval("spec.interval", app.GetInterval().Duration)
	kit.Capped(r.Recorder, app, true, n1, n2)
	manager, err := r.Applier(app)
	if err != nil {
		return r.failRevision(s, gitsyncv1.ApplyFailedReason, err)
	}
	s.manager = manager
	if s.chartCRDs.CreateOnly {
		// A chart's CRDs under crds: Create that exist are never updated: they leave this
		// sync's apply (one GET each, once) and stay in the inventory (see reconcilePrune).
		existing, err := manager.Existing(ctx, s.objects, s.chartCRDs.IsCreateOnly)
		if err != nil {
			return r.failRevision(s, gitsyncv1.ApplyFailedReason, err)
		}
		s.plan.Without(existing)
		s.objects = s.plan.Objects()
	}
	who := applier.Identity(app, r.DefaultServiceAccount)
	app.Status.ServiceAccount = who

	s.markProgress(ctx, "applying revision %s", s.revision)
	if r.Desired != nil {
		r.Desired.Prepare(ctx, client.ObjectKeyFromObject(app), s.chartCRDs.Watched(s.objects))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout(app))
	defer cancel()
	s.applyTried = true
	result, err := r.applyLocked(ctx, s, apply.Options{Force: app.Spec.Force, Previous: previous,
		OwnerReleased: r.ownerReleased(app),
		Ignore:        func(o *unstructured.Unstructured) []string { return render.IgnorePointers(app, o) }})
	if err != nil && result != nil {
		// Part of the set (its first stage: CRDs, Namespaces) was written before the
		// failure: keep it in the inventory so that a later prune can remove it.
		setInventory(app, union(previous, result.Inventory))
	}
	if err != nil {
		var conflict *apply.ConflictError
		if errors.As(err, &conflict) {
			// Retried with backoff: the other Application may let go of it.
			return r.failRevision(s, gitsyncv1.ApplyFailedReason, err)
		}
		var hook *hookError
		if errors.As(err, &hook) {
			return r.stalledRevision(s, gitsyncv1.HookFailedReason, fmt.Sprintf("revision %s: %v", s.revision, err))
		}
		doing := "applying revision " + s.revision
		if who != applier.OperatorIdentity {
			doing += " as " + who
		}
		return r.failRevision(s, gitsyncv1.ApplyFailedReason, fmt.Errorf("%s: %w", doing, err))
	}
	s.result = result
	return ctrl.Result{}, nil
}

// applyLocked applies the objects and, when that succeeds, makes them the desired state
// of the drift controller, holding the Application's drift lock throughout: a drift
// correction never runs in between and so never writes the previous revision's object
// over the new one. The desired state switches before the prune, so that the deletions
// it makes are not taken for drift and undone.
func (r *Reconciler) applyLocked(ctx context.Context, s *syncRun, opts apply.Options) (*apply.Result, error) {
	if r.Desired == nil {
		return r.applyPlan(ctx, s, s.manager, opts)
	}
	key := client.ObjectKeyFromObject(s.app)
	unlock := r.Desired.Lock(key)
	defer unlock()
	// What the last sync left untouched is not sent again; until this one is recorded,
	// nothing is vouched for (a failed apply may have written part of the set).
	opts.Unchanged = r.Desired.Unchanged(key)
	opts.Owners = r.Desired.Owners
	r.Desired.Unsure(key)
	result, err := r.applyPlan(ctx, s, s.manager, opts)
	if err != nil {
		return result, err
	}
	if err := r.Desired.Applied(ctx, key, s.chartCRDs.Watched(s.objects)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "starting drift watches")
	}
	return result, nil
}
