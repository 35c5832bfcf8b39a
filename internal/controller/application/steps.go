package application

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// reconcileDependencies waits until every Application in spec.dependsOn is Ready for its
// current generation. Sets Ready=False/DependencyNotReady while one is not.
func (r *Reconciler) reconcileDependencies(ctx context.Context, s *syncRun) (ctrl.Result, error) {
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
func (r *Reconciler) reconcileSource(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		return r.reconcileChartSource(ctx, s) // application_chart.go
	}
	key := render.SourceKey(app)
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		msg := fmt.Sprintf("reading source %s: %v", key, err)
		if apierrors.IsNotFound(err) {
			msg = fmt.Sprintf("source GitRepository %s does not exist", key)
		}
		return r.notReady(s, gitsyncv1.ArtifactNotReadyReason, msg)
	}
	artifact := kit.CurrentArtifact(repo)
	if artifact == nil {
		if reason, msg, failed := sourceFailure(repo, key); failed {
			return r.notReady(s, reason, msg)
		}
		return r.notReady(s, gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("source GitRepository %s has no artifact yet", key))
	}
	s.revision = artifact.Revision
	if app.Spec.PinnedRevision != "" { // a rollback: see application_pin.go
		return r.reconcilePinned(ctx, s, repo)
	}

	if awaitingSyncRequest(s) {
		return ctrl.Result{}, nil
	}

	s.dir = sourceid.CheckoutDir(r.Storage, repo, artifact.Commit)
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
		if settled(app, s.revision) {
			// Synced at this revision already and nothing asked for (a restart with a
			// fresh storage path): the cluster is as it was, so the conditions stay (a
			// flap to not Ready would make the next reconcile a full sync, overwriting
			// drift that selfHeal: false only reports); reconcileRestore resumes drift
			// protection once the checkout is back.
			s.stop = true
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		reason, msg, failed := sourceFailure(repo, key)
		if !failed { // the source is fetching it, or will
			reason, msg = gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("checkout of %s is not in storage; asked %s to fetch it", s.revision, key)
		}
		res, err := r.notReady(s, reason, msg)
		res.RequeueAfter = wait
		return res, err
	}
	r.refreshDone(client.ObjectKeyFromObject(app))
	return ctrl.Result{}, nil
}

// sourceFailure passes a failing source's own reason and message through (its Ready is
// False for its current spec): "source GitRepository ns/name: <the fetch error>".
func sourceFailure(repo *gitsyncv1.GitRepository, key types.NamespacedName) (reason, msg string, failed bool) {
	ready := conditions.Get(repo, gitsyncv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || repo.Status.ObservedGeneration != repo.Generation ||
		ready.Reason == gitsyncv1.ProgressingReason {
		return "", "", false
	}
	return ready.Reason, fmt.Sprintf("source GitRepository %s: %s", key, ready.Message), true
}

// settled tells whether the Application was synced at revision with its current spec,
// is Ready (or not Ready only for what it reports: drift left alone, objects a sync
// request kept from the prune), and no sync was requested since.
func settled(app *gitsyncv1.Application, revision string) bool {
	return revision == app.Status.LastAppliedRevision &&
		app.Generation == app.Status.ObservedGeneration &&
		(conditions.IsReady(app) || reportedOnly(app)) &&
		app.PendingRequest() == ""
}

// reportedOnly tells whether Ready is False for a state the Application reports but
// does not change by itself: drift (selfHeal off, or a fight's backoff) and objects
// that left Git but a sync request kept from the prune.
func reportedOnly(app *gitsyncv1.Application) bool {
	if !conditions.IsFalse(app, gitsyncv1.ReadyCondition) {
		return false
	}
	reason := conditions.GetReason(app, gitsyncv1.ReadyCondition)
	return reason == gitsyncv1.DriftDetectedReason || reason == gitsyncv1.PruneSkippedReason
}

// awaitingSyncRequest holds a new revision back while autoSync is off and no sync was
// requested (a sync of it that waits for a hook or a wave goes on): sync OutOfSync, and
// the steps stop.
func awaitingSyncRequest(s *syncRun) bool {
	app := s.app
	if autoSync(app) || s.revision == app.Status.LastAppliedRevision || app.PendingRequest() != "" || resumable(s) != nil {
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
func (r *Reconciler) reconcileBackstop(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	key := client.ObjectKeyFromObject(app)
	quiet := !r.refsChanged.take(key) && r.Desired != nil && r.Desired.Tracked(key) && settled(app, s.revision)
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
func (r *Reconciler) reconcileBuild(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	if resumable(s) == nil {
		s.app.Status.SyncProgress = nil // a waiting sync of another revision or spec: superseded
	}
	s.attempted = true
	s.app.Status.LastAttemptedRevision = s.revision
	release := r.Storage.Acquire(s.dir) // checkout GC keeps it while the build reads it
	defer release()
	res, err := r.render(ctx, s.dir, s.app)
	if render.IsRetryable(err) {
		return r.failRevision(s, gitsyncv1.ArtifactNotReadyReason, fmt.Errorf("rendering chart %s at %s: %w", pathOf(s.app), s.revision, err))
	}
	if render.IsLimit(err) {
		return r.stalledRevision(s, gitsyncv1.RenderLimitExceededReason, fmt.Sprintf("rendering %s at %s: %v", pathOf(s.app), s.revision, err))
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
func (r *Reconciler) render(ctx context.Context, dir string, app *gitsyncv1.Application) (*render.Result, error) {
	if err := r.checkAccess(app); err != nil { // every render passes the one access check
		return nil, err
	}
	src := render.Source{Root: dir, Path: pathOf(app)}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		src = render.Source{Archive: dir}
	}
	if r.Renderer != nil {
		return r.Renderer(ctx, app, src, r.cluster(app))
	}
	return render.Render(ctx, app, src, r.cluster(app))
}
