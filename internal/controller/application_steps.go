package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/applier"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// reconcileDependencies waits until every Application in spec.dependsOn is Ready for its
// current generation. Sets Ready=False/DependencyNotReady while one is not.
func (r *ApplicationReconciler) reconcileDependencies(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	for _, dep := range s.app.Spec.DependsOn {
		key := types.NamespacedName{Namespace: dep.Namespace, Name: dep.Name}
		if key.Namespace == "" {
			key.Namespace = s.app.Namespace
		}
		other := &gitsyncv1.Application{}
		err := r.Get(ctx, key, other)
		ready := err == nil && conditions.IsReady(other) && other.Status.ObservedGeneration == other.Generation
		if !ready {
			msg := fmt.Sprintf("dependency %s is not ready", key)
			if err != nil {
				msg = fmt.Sprintf("dependency %s: %v", key, client.IgnoreNotFound(err))
				if apierrors.IsNotFound(err) {
					msg = fmt.Sprintf("dependency %s does not exist", key)
				}
			}
			conditions.MarkFalse(s.app, gitsyncv1.ReadyCondition, gitsyncv1.DependencyNotReadyReason, "%s", msg)
			conditions.Delete(s.app, gitsyncv1.ReconcilingCondition)
			s.stop = true
			return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
		}
	}
	return ctrl.Result{}, nil
}

// reconcileSource finds the source's artifact and its checkout. Without an artifact:
// Ready=False/ArtifactNotReady (the source's watch wakes the Application when it comes).
// With autoSync off, a new revision waits (sync OutOfSync) until requested-at changes.
func (r *ApplicationReconciler) reconcileSource(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		return r.reconcileChartSource(ctx, s) // application_chart.go
	}
	key := sourceKey(app)
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		msg := fmt.Sprintf("reading source %s: %v", key, err)
		if apierrors.IsNotFound(err) {
			msg = fmt.Sprintf("source GitRepository %s does not exist", key)
		}
		return r.notReady(s, gitsyncv1.ArtifactNotReadyReason, msg)
	}
	artifact := currentArtifact(repo)
	if artifact == nil {
		return r.notReady(s, gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("source GitRepository %s has no artifact yet", key))
	}
	s.revision = artifact.Revision
	if app.Spec.PinnedRevision != "" { // a rollback: see application_pin.go
		return r.reconcilePinned(ctx, s, repo)
	}

	if awaitingSyncRequest(s) {
		return ctrl.Result{}, nil
	}

	s.dir = r.Storage.CheckoutDir(render.RepositoryKey(repo), artifact.Commit, render.IgnoreLines(repo.Spec.Ignore))
	if _, err := os.Stat(s.dir); err != nil && r.Shard.Enabled() && !r.Shard.Owns(repo) {
		// Another replica owns the source and fetched the commit on its own disk.
		if s.dir, err = r.fetchCommit(ctx, repo, artifact.Commit); err != nil {
			return r.notReady(s, gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("revision %s: %v", s.revision, err))
		}
	} else if err != nil {
		// The checkout is gone (a restart with a fresh storage path, or GC): ask the
		// source to fetch it again, once per revision (the source has its own backoff);
		// its new status wakes this Application, which otherwise looks again less and
		// less often.
		ask, wait := r.askRefresh(client.ObjectKeyFromObject(app), s.revision)
		if ask {
			if err := r.requestSourceRefresh(ctx, repo); err != nil {
				return ctrl.Result{}, err
			}
		}
		res, err := r.notReady(s, gitsyncv1.ArtifactNotReadyReason,
			fmt.Sprintf("checkout of %s is not in storage; asked %s to fetch it", s.revision, key))
		res.RequeueAfter = wait
		return res, err
	}
	r.refreshDone(client.ObjectKeyFromObject(app))
	return ctrl.Result{}, nil
}

// awaitingSyncRequest holds a new revision back while autoSync is off and no sync was
// requested: sync OutOfSync, and the steps stop.
func awaitingSyncRequest(s *syncRun) bool {
	app := s.app
	requested := app.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	newRequest := requested != "" && requested != app.Status.LastHandledReconcileAt
	if autoSync(app) || s.revision == app.Status.LastAppliedRevision || newRequest {
		return false
	}
	app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
	if !conditions.Has(app, gitsyncv1.ReadyCondition) {
		conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, "AwaitingSync",
			"revision %s waits for a sync request (autoSync is false)", s.revision)
	}
	conditions.Delete(app, gitsyncv1.ReconcilingCondition)
	s.stop = true
	return true
}

// reconcileBackstop ends a routine resync early: when the revision, the spec and the
// last result are unchanged, no sync was requested and the drift watches hold this
// Application's objects, the resync only compares the watch cache with what the drift
// checks last saw (no API request) and hands any difference to the drift controller.
// Health is read again only while it is not Healthy.
func (r *ApplicationReconciler) reconcileBackstop(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	key := client.ObjectKeyFromObject(app)
	requested := app.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	quiet := !r.refsChanged.take(key) && r.Desired != nil && r.Desired.Tracked(key) &&
		s.revision == app.Status.LastAppliedRevision &&
		app.Generation == app.Status.ObservedGeneration &&
		conditions.IsReady(app) &&
		(requested == "" || requested == app.Status.LastHandledReconcileAt)
	if !quiet {
		return ctrl.Result{}, nil
	}
	s.stop = true
	r.Desired.Backstop(key)
	if app.Status.Health != nil && app.Status.Health.Status != gitsyncv1.HealthStatusHealthy {
		manager, err := r.Applier(app)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.manager = manager
		r.recordHealth(ctx, s)
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
}

// reconcileBuild renders spec.path. A failure applies nothing: Ready=False/BuildFailed.
func (r *ApplicationReconciler) reconcileBuild(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	s.attempted = true
	s.app.Status.LastAttemptedRevision = s.revision
	release := r.Storage.Acquire(s.dir) // checkout GC keeps it while the build reads it
	defer release()
	res, err := r.render(ctx, s.dir, s.app)
	if render.IsRetryable(err) {
		return r.failRevision(s, gitsyncv1.ArtifactNotReadyReason, fmt.Errorf("rendering chart %s at %s: %w", pathOf(s.app), s.revision, err))
	}
	if render.IsValuesError(err) {
		return r.stalledRevision(s, gitsyncv1.ValuesNotFoundReason, fmt.Sprintf("rendering chart %s at %s: %v", pathOf(s.app), s.revision, err))
	}
	if err != nil {
		return r.stalledRevision(s, gitsyncv1.BuildFailedReason, fmt.Sprintf("building %s at %s: %v", pathOf(s.app), s.revision, err))
	}
	s.objects = res.Objects
	s.chart, s.chartVersion, s.chartCRDs = res.Chart.Name, res.Chart.Version, res.Chart
	if err := r.planSync(s); err != nil {
		reason := gitsyncv1.BuildFailedReason
		if len(s.app.Spec.HealthChecks) > 0 && strings.HasPrefix(err.Error(), "spec.healthChecks") {
			reason = gitsyncv1.HealthCheckInvalidReason
		}
		return r.stalledRevision(s, reason, fmt.Sprintf("building %s at %s: %v", pathOf(s.app), s.revision, err))
	}
	return ctrl.Result{}, nil
}

// render renders the Application from a checkout (or, with a HelmRepository source,
// the chart archive at dir) as its sync does (see cluster).
func (r *ApplicationReconciler) render(ctx context.Context, dir string, app *gitsyncv1.Application) (*render.Result, error) {
	src := render.Source{Root: dir, Path: pathOf(app)}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		src = render.Source{Archive: dir}
	}
	return render.Render(ctx, app, src, r.cluster(app))
}

// reconcileApply dry-runs then applies the objects (nothing is applied if any is
// rejected). Refuses an empty render that would prune everything unless allowEmpty.
// Sets Ready=False/ApplyFailed or PruneFailed on failure.
func (r *ApplicationReconciler) reconcileApply(ctx context.Context, s *syncRun) (ctrl.Result, error) {
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
	capped(r.Recorder, app, true, n1, n2)
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
func (r *ApplicationReconciler) applyLocked(ctx context.Context, s *syncRun, opts apply.Options) (*apply.Result, error) {
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

// reconcilePrune deletes what left Git (only objects still carrying this Application's
// labels), when spec.prune is set. What the render describes stays in the inventory
// whether it was applied or not (a chart's CRDs that crds: Create leaves alone once they
// exist, or crds: Skip): a policy does not remove an object from Git. A CRD that still
// has custom resources is not deleted without spec.pruneCRDs (Ready=False/PruneRefused),
// and a Namespace holding objects gitsync does not manage is orphaned with a Warning.
// Sets Ready=False/PruneFailed on other failures.
func (r *ApplicationReconciler) reconcilePrune(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	previous := s.previous
	current := union(s.result.Inventory, stillDescribed(previous, s))
	if app.Spec.Prune {
		stale := apply.Stale(previous, current)
		if len(stale) > 0 {
			pruned, err := pruneInWaveOrder(ctx, s.manager, stale, r.pruneOptions(app))
			orphaned := r.recordOrphans(s, pruned)
			if err != nil {
				// What was applied is recorded; the stale objects (but the orphaned) stay
				// in the inventory so the next attempt prunes them.
				setInventory(app, append(append([]apply.Entry{}, current...), without(stale, orphaned)...))
				var refused *apply.RefusedError
				if errors.As(err, &refused) {
					return r.stalledRevision(s, gitsyncv1.PruneRefusedReason, fmt.Sprintf("revision %s applied; pruning: %v", s.revision, err))
				}
				return r.failRevision(s, gitsyncv1.PruneFailedReason, fmt.Errorf("pruning: %w", err))
			}
		}
	}
	setInventory(app, current)
	return ctrl.Result{}, nil
}

// stillDescribed returns the entries of the last inventory that the render describes
// but the apply did not report (a policy left them out of it).
func stillDescribed(previous []apply.Entry, s *syncRun) []apply.Entry {
	described := make(map[string]bool, len(s.objects)+len(s.chartCRDs.CRDs))
	for _, o := range s.objects {
		described[apply.EntryOf(o).ID] = true
	}
	for id := range s.chartCRDs.CRDs {
		described[id] = true
	}
	var out []apply.Entry
	for _, e := range previous {
		if described[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// recordOrphans keeps the deletions in s.pruned and emits a Warning for each object the
// prune orphaned on purpose; it returns the orphaned objects' IDs.
func (r *ApplicationReconciler) recordOrphans(s *syncRun, changes []apply.Change) map[string]bool {
	orphaned := map[string]bool{}
	for _, c := range changes {
		if c.Action != apply.OrphanedAction {
			s.pruned = append(s.pruned, c)
			continue
		}
		orphaned[c.ID] = true
		r.Recorder.Eventf(s.app, nil, corev1.EventTypeWarning, gitsyncv1.OrphanedReason, "Prune",
			"%s left Git but was not deleted: %s; it is no longer managed", c.Subject, c.Message)
	}
	return orphaned
}

// without returns entries whose IDs are not in ids.
func without(entries []apply.Entry, ids map[string]bool) []apply.Entry {
	var out []apply.Entry
	for _, e := range entries {
		if !ids[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// reconcileHealth computes the health of the applied objects (status.health, Healthy)
// and, with spec.wait, holds Ready until they are healthy or fails with HealthCheckFailed.
func (r *ApplicationReconciler) reconcileHealth(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	entries := inventoryEntries(app)
	if app.Spec.Wait {
		s.markProgress(ctx, "waiting for %d objects to be healthy", len(entries))
		if err := s.manager.Wait(ctx, entries, r.timeout(app)); err != nil {
			r.recordHealth(ctx, s)
			return r.failRevision(s, gitsyncv1.HealthCheckFailedReason, fmt.Errorf("health check of revision %s: %w", s.revision, err))
		}
	}
	r.recordHealth(ctx, s)
	if s.health != nil && s.health.Status == gitsyncv1.HealthStatusMissing {
		// Applied, yet not there: the revision is not in the cluster (retried).
		return r.failRevision(s, gitsyncv1.ObjectsMissingReason,
			fmt.Errorf("revision %s was applied, but objects are missing: %s", s.revision, s.health.Message))
	}
	return ctrl.Result{}, nil
}

func (r *ApplicationReconciler) recordHealth(ctx context.Context, s *syncRun) {
	health, err := s.manager.HealthAfterApply(ctx, inventoryEntries(s.app))
	if err != nil {
		s.app.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusUnknown, Message: err.Error()}
		conditions.MarkUnknown(s.app, gitsyncv1.HealthyCondition, gitsyncv1.HealthStatusUnknown, "%s", err)
		return
	}
	s.health = health
	s.app.Status.Health = &gitsyncv1.HealthInfo{Status: health.Status, Message: health.Message}
	if health.Status == gitsyncv1.HealthStatusHealthy {
		conditions.MarkTrue(s.app, gitsyncv1.HealthyCondition, gitsyncv1.HealthStatusHealthy, "all %d objects are healthy", len(s.app.Status.Inventory.Entries))
	} else {
		conditions.MarkFalse(s.app, gitsyncv1.HealthyCondition, health.Status, "%s", health.Message)
	}
}
