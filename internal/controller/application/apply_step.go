package application

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
)

// reconcileApply dry-runs then applies the objects (nothing is applied if any is
// rejected). Refuses an empty render that would prune everything unless allowEmpty.
// Sets Ready=False/ApplyFailed or PruneFailed on failure.
func (r *Reconciler) reconcileApply(ctx context.Context, s *syncRun) outcome {
	app := s.app
	selectors, err := app.RequestedResources()
	if err != nil {
		s.applyTried = true // a request that does not parse is used up
		return stalled(gitsyncv1.ApplyFailedReason, err.Error())
	}
	if selectors != nil {
		return r.reconcileSelective(ctx, s, selectors) // selective.go
	}
	app.Status.SelectiveSync = nil // a full sync supersedes it
	previous := s.previous
	s.prune = app.RequestedPrune() // a resumed run takes its own from status.syncProgress (applyPlan)
	if app.RefusesEmpty(len(s.objects), len(previous)) {
		return r.revisionStalled(s, gitsyncv1.PruneFailedReason, fmt.Sprintf(
			"%s rendered no objects at %s: refusing to prune all %d objects (set allowEmpty: true to allow it)",
			pathOf(app), s.revision, len(previous)))
	}
	// Each apply (routine resyncs stop before it; a sync that resumes said it when it
	// began) says which limits it runs under.
	_, n1 := r.Caps.Timeout("spec.timeout", app.GetTimeout().Duration)
	_, n2 := r.Caps.Interval("spec.interval", app.GetInterval().Duration)
	kit.Capped(r.Recorder, app, resumable(s) == nil, n1, n2)
	manager, err := r.Applier(app)
	if err != nil {
		return revisionRetry(gitsyncv1.ApplyFailedReason, err)
	}
	s.manager = manager
	if s.chartCRDs.CreateOnly {
		// A chart's CRDs under crds: Create that exist are never updated: they leave this
		// sync's apply (one GET each, once) and stay in the inventory (see reconcilePrune).
		existing, err := manager.Existing(ctx, s.objects, s.chartCRDs.IsCreateOnly)
		if err != nil {
			return revisionRetry(gitsyncv1.ApplyFailedReason, err)
		}
		s.plan.Without(existing)
		s.objects = s.plan.Objects()
	}
	who := impersonate.Identity(app, r.DefaultServiceAccount)
	if isRemote(app) { // cluster_step.go
		if t, err := r.targetOf(ctx, app); err == nil {
			who = remoteIdentity(t, app)
		}
	}
	app.Status.ServiceAccount = who

	s.markProgress(ctx, "applying revision %s", s.revision)
	if r.Desired != nil && !isRemote(app) { // a remote Application's watches: cluster_drift.go
		r.Desired.Prepare(ctx, client.ObjectKeyFromObject(app), s.chartCRDs.Watched(s.objects))
	}
	// An ordered run bounds its own waits (spec.timeout from its start, and it yields
	// after waitInWorker); this bounds the requests of one reconcile.
	ctx, cancel := context.WithTimeout(ctx, r.timeout(app)+r.waitInWorker())
	defer cancel()
	s.applyTried = true
	result, err := r.applyLocked(ctx, s, apply.Options{Force: app.Spec.Force, Previous: previous,
		OwnerReleased: r.ownerReleased(app),
		Ignore:        func(o *unstructured.Unstructured) []string { return app.IgnorePointers(o) }})
	if s.waiting {
		return r.yieldSync(s, result)
	}
	if err != nil && result != nil {
		// Part of the set (its first stage: CRDs, Namespaces) was written before the
		// failure: keep it in the inventory so that a later prune can remove it.
		setInventory(app, union(previous, result.Inventory))
	}
	if err != nil {
		var conflict *apply.ConflictError
		if errors.As(err, &conflict) {
			// Retried with backoff: the other Application may let go of it.
			return revisionRetry(gitsyncv1.ApplyFailedReason, err)
		}
		var hook *hookError
		if errors.As(err, &hook) {
			return r.revisionStalled(s, gitsyncv1.HookFailedReason, fmt.Sprintf("revision %s: %v", s.revision, err))
		}
		doing := "applying revision " + s.revision
		if who != impersonate.OperatorIdentity {
			doing += " as " + who
		}
		return revisionRetry(gitsyncv1.ApplyFailedReason, fmt.Errorf("%s: %w", doing, err))
	}
	s.result = result
	return done()
}

// applyLocked applies the objects and, when that succeeds, makes them the desired state
// of the drift controller, holding the Application's drift lock throughout: a drift
// correction never runs in between and so never writes the previous revision's object
// over the new one. The desired state switches before the prune, so that the deletions
// it makes are not taken for drift and undone.
func (r *Reconciler) applyLocked(ctx context.Context, s *syncRun, opts apply.Options) (*apply.Result, error) {
	if isRemote(s.app) { // its watches are on its cluster: cluster_drift.go
		return r.applyRemote(ctx, s, opts)
	}
	if r.Desired == nil {
		return r.applyPlan(ctx, s, s.manager, opts)
	}
	key := client.ObjectKeyFromObject(s.app)
	if s.lock.unlock == nil {
		s.lock.unlock = r.Desired.Lock(key)
	}
	// Released at the end of the reconcile, or kept until the run ends if it yields.
	defer func() { s.lock.keep = s.waiting }()
	// What the last sync left untouched is not sent again; until this one is recorded,
	// nothing is vouched for (a failed apply may have written part of the set).
	opts.Unchanged = r.Desired.Unchanged(key)
	opts.Owners = r.Desired.Owners
	r.Desired.Unsure(key)
	result, err := r.applyPlan(ctx, s, s.manager, opts)
	if err != nil || s.waiting {
		return result, err
	}
	if err := r.Desired.Applied(ctx, key, s.chartCRDs.Watched(s.objects)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "starting drift watches")
	}
	return result, nil
}

// yieldSync ends a reconcile whose ordered run waits (see resume.go): what it applied
// joins the inventory (a later prune may remove it), with an Applied event when it
// changed something, and the steps stop until the next look.
func (r *Reconciler) yieldSync(s *syncRun, result *apply.Result) outcome {
	app := s.app
	if result != nil {
		setInventory(app, union(s.previous, result.Inventory))
		if changed := result.Count(apply.CreatedAction) + result.Count(apply.ConfiguredAction); changed > 0 {
			r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Applied", "Sync", "revision %s\n%s", s.revision, changeSummary(result.Changes, nil))
		}
	}
	return waitFor(waitRequeue(r.now().Sub(app.Status.SyncProgress.StartedAt.Time)), "", "")
}
