package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/build"
)

// Checkouts locates the stored checkout of a commit (internal/source's Fetcher).
type Checkouts interface {
	CheckoutDir(commit string, ignore []string) string
}

// ApplicationReconciler builds an Application's path from its source's artifact, applies
// it, prunes what left Git and reports sync and health.
type ApplicationReconciler struct {
	client.Client
	// APIReader reads sources and dependencies uncached where freshness matters.
	APIReader client.Reader
	// Applier makes the apply.Manager of an Application: it goes through an uncached
	// client, impersonating spec.serviceAccountName when set.
	Applier  func(app *gitsyncv1.Application) (*apply.Manager, error)
	Mapper   meta.RESTMapper
	Storage  Checkouts
	Recorder recorder.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Jitter returns the extra delay added to an interval; none when nil.
	Jitter func(time.Duration) time.Duration
	// Drift, when set, watches what was applied and corrects drift between syncs; with
	// it, a quiet interval resync makes no API request (see reconcileBackstop).
	Drift *DriftReconciler
	// RetryInterval is how often an Application waiting for its source's artifact or for
	// its dependencies looks again (5s when zero). The watches usually come first; this
	// covers an event that reached the cache before the Application did.
	RetryInterval time.Duration
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=applications,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applications/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applications/finalizers,verbs=update
// +kubebuilder:rbac:groups=*,resources=*,verbs=*
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate

var applicationOwnedConditions = []string{
	gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition, gitsyncv1.HealthyCondition,
}

// Reconcile runs the steps of a sync; status is written by the deferred patch (and once
// before the apply, to show progress).
func (r *ApplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	app := &gitsyncv1.Application{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, app)
	}
	if !controllerutil.ContainsFinalizer(app, gitsyncv1.Finalizer) {
		patchBase := client.MergeFrom(app.DeepCopy())
		controllerutil.AddFinalizer(app, gitsyncv1.Finalizer)
		if err := r.Patch(ctx, app, patchBase); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if app.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, skipping")
		if r.Drift != nil {
			r.Drift.Forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}

	patcher := patch.NewSerialPatcher(app, r.Client)
	defer func() {
		app.Status.LastHandledReconcileAt = requestHandled(app, app.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, patchStatus(ctx, patcher, app, applicationOwnedConditions, true))
		reconcileDuration.WithLabelValues(gitsyncv1.ApplicationKind).Observe(r.now().Sub(start).Seconds())
	}()

	s := &syncRun{app: app, started: metav1.NewTime(start), previous: inventoryEntries(app)}
	s.saveProgress = func(ctx context.Context) error {
		return patchStatus(ctx, patcher, app, applicationOwnedConditions, false)
	}
	for _, step := range []func(context.Context, *syncRun) (ctrl.Result, error){
		r.reconcileDependencies,
		r.reconcileSource,
		r.reconcileBackstop,
		r.reconcileBuild,
		r.reconcileApply,
		r.reconcilePrune,
		r.reconcileHealth,
	} {
		res, err := step(ctx, s)
		if err != nil || s.stop {
			s.finish(r, err)
			return res, err
		}
	}
	s.finish(r, nil)
	return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
}

// syncRun carries what one reconcile learned from step to step.
type syncRun struct {
	app      *gitsyncv1.Application
	started  metav1.Time
	revision string
	// previous is the inventory of the last sync.
	previous []apply.Entry
	dir      string
	objects  []*unstructured.Unstructured
	manager  *apply.Manager
	result   *apply.Result
	pruned   []apply.Change
	health   *apply.Health
	// attempted is true once a revision was handed to the apply (it goes in history).
	attempted bool
	// stop ends the steps without an error (waiting, refused, nothing to do).
	stop bool
	// failure is the reason of a failed revision.
	failure string
	// saveProgress writes status now, before a long step.
	saveProgress func(context.Context) error
}

// markProgress sets Reconciling and writes it, when the run will change something
// visible: a new revision or a new spec. A routine resync writes nothing.
func (s *syncRun) markProgress(ctx context.Context, format string, args ...any) error {
	app := s.app
	if s.revision == app.Status.LastAppliedRevision && app.Generation == app.Status.ObservedGeneration &&
		conditions.IsReady(app) {
		return nil
	}
	conditions.MarkReconciling(app, gitsyncv1.ProgressingReason, format, args...)
	return client.IgnoreNotFound(s.saveProgress(ctx))
}

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

	requested := app.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	newRequest := requested != "" && requested != app.Status.LastHandledReconcileAt
	if !autoSync(app) && s.revision != app.Status.LastAppliedRevision && !newRequest {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
		if !conditions.Has(app, gitsyncv1.ReadyCondition) {
			conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, "AwaitingSync",
				"revision %s waits for a sync request (autoSync is false)", s.revision)
		}
		conditions.Delete(app, gitsyncv1.ReconcilingCondition)
		s.stop = true
		return ctrl.Result{}, nil
	}

	s.dir = r.Storage.CheckoutDir(artifact.Commit, ignoreLines(repo.Spec.Ignore))
	if _, err := os.Stat(s.dir); err != nil {
		// The checkout is gone (a restart with a fresh storage path, or GC): ask the
		// source to fetch it again; its new status wakes this Application.
		if err := r.requestSourceRefresh(ctx, repo); err != nil {
			return ctrl.Result{}, err
		}
		return r.notReady(s, gitsyncv1.ArtifactNotReadyReason,
			fmt.Sprintf("checkout of %s is not in storage; asked %s to fetch it", s.revision, key))
	}
	return ctrl.Result{}, nil
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
	quiet := r.Drift != nil && r.Drift.Tracked(key) &&
		s.revision == app.Status.LastAppliedRevision &&
		app.Generation == app.Status.ObservedGeneration &&
		conditions.IsReady(app) &&
		(requested == "" || requested == app.Status.LastHandledReconcileAt)
	if !quiet {
		return ctrl.Result{}, nil
	}
	s.stop = true
	r.Drift.Backstop(key)
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
func (r *ApplicationReconciler) reconcileBuild(_ context.Context, s *syncRun) (ctrl.Result, error) {
	s.attempted = true
	s.app.Status.LastAttemptedRevision = s.revision
	objs, err := build.Build(s.dir, s.app.Spec.Path)
	if err != nil {
		return r.stalledRevision(s, gitsyncv1.BuildFailedReason, fmt.Sprintf("building %s at %s: %v", pathOf(s.app), s.revision, err))
	}
	ns := s.app.Spec.TargetNamespace
	if ns == "" {
		ns = s.app.Namespace
	}
	if err := build.SetDefaultNamespace(objs, ns, r.isNamespaced); err != nil {
		return r.stalledRevision(s, gitsyncv1.BuildFailedReason, fmt.Sprintf("building %s at %s: %v", pathOf(s.app), s.revision, err))
	}
	s.objects = objs
	return ctrl.Result{}, nil
}

// reconcileApply dry-runs then applies the objects (nothing is applied if any is
// rejected). Refuses an empty render that would prune everything unless allowEmpty.
// Sets Ready=False/ApplyFailed or PruneFailed on failure.
func (r *ApplicationReconciler) reconcileApply(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	previous := s.previous
	if len(s.objects) == 0 && app.Spec.Prune && len(previous) > 0 && !app.Spec.AllowEmpty {
		return r.stalledRevision(s, gitsyncv1.PruneFailedReason, fmt.Sprintf(
			"%s rendered no objects at %s: refusing to prune all %d objects (set allowEmpty: true to allow it)",
			pathOf(app), s.revision, len(previous)))
	}
	manager, err := r.Applier(app)
	if err != nil {
		return r.failRevision(s, gitsyncv1.ApplyFailedReason, err)
	}
	s.manager = manager

	if err := s.markProgress(ctx, "applying revision %s", s.revision); err != nil {
		return ctrl.Result{}, err
	}
	if r.Drift != nil {
		r.Drift.Prepare(ctx, s.objects)
	}
	ctx, cancel := context.WithTimeout(ctx, app.GetTimeout().Duration)
	defer cancel()
	result, err := manager.Apply(ctx, s.objects, apply.Options{Force: app.Spec.Force, Previous: previous})
	if err != nil && result != nil {
		// Part of the set (its first stage: CRDs, Namespaces) was written before the
		// failure: keep it in the inventory so that a later prune can remove it.
		setInventory(app, union(previous, result.Inventory))
	}
	if err != nil {
		var conflict *apply.ConflictError
		if errors.As(err, &conflict) {
			return r.stalledRevision(s, gitsyncv1.ApplyFailedReason, err.Error())
		}
		return r.failRevision(s, gitsyncv1.ApplyFailedReason, fmt.Errorf("applying revision %s: %w", s.revision, err))
	}
	s.result = result
	if r.Drift != nil {
		// From now on drift is measured against this revision — before the prune, so
		// that the deletions it makes are not taken for drift and undone.
		if err := r.Drift.Applied(ctx, client.ObjectKeyFromObject(app), s.objects); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "starting drift watches")
		}
	}
	return ctrl.Result{}, nil
}

// reconcilePrune deletes what left Git (only objects still carrying this Application's
// labels), when spec.prune is set. Sets Ready=False/PruneFailed on failure.
func (r *ApplicationReconciler) reconcilePrune(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	previous := s.previous
	current := s.result.Inventory
	if app.Spec.Prune {
		stale := apply.Stale(previous, current)
		if len(stale) > 0 {
			pruned, err := s.manager.Prune(ctx, stale)
			s.pruned = pruned
			if err != nil {
				// What was applied is recorded; the stale objects stay in the inventory
				// so the next attempt prunes them.
				setInventory(app, append(append([]apply.Entry{}, current...), stale...))
				return r.failRevision(s, gitsyncv1.PruneFailedReason, fmt.Errorf("pruning: %w", err))
			}
		}
	}
	setInventory(app, current)
	return ctrl.Result{}, nil
}

// reconcileHealth computes the health of the applied objects (status.health, Healthy)
// and, with spec.wait, holds Ready until they are healthy or fails with HealthCheckFailed.
func (r *ApplicationReconciler) reconcileHealth(ctx context.Context, s *syncRun) (ctrl.Result, error) {
	app := s.app
	entries := inventoryEntries(app)
	if app.Spec.Wait {
		if err := s.markProgress(ctx, "waiting for %d objects to be healthy", len(entries)); err != nil {
			return ctrl.Result{}, err
		}
		if err := s.manager.Wait(ctx, entries, app.GetTimeout().Duration); err != nil {
			r.recordHealth(ctx, s)
			return r.failRevision(s, gitsyncv1.HealthCheckFailedReason, fmt.Errorf("health check of revision %s: %w", s.revision, err))
		}
	}
	r.recordHealth(ctx, s)
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

// finish records the outcome of the steps: Ready, sync status, history and events.
func (s *syncRun) finish(r *ApplicationReconciler, err error) {
	app := s.app
	if s.failure == "" && (err != nil || s.stop || s.result == nil) {
		return // stopped before the end without a failed revision: the step set the conditions
	}
	changed := s.result != nil && (s.result.Count("created")+s.result.Count("configured")+len(s.pruned) > 0)
	failed := s.failure != ""
	if failed {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
	} else {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: s.revision}
		app.Status.LastAppliedRevision = s.revision
		// Every object was just applied from Git: nothing is drifted any more.
		app.Status.Drift = nil
		conditions.Delete(app, gitsyncv1.ReconcilingCondition)
		conditions.Delete(app, gitsyncv1.StalledCondition)
		conditions.MarkTrue(app, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "applied revision %s", s.revision)
	}
	if changed {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Applied", "Sync", "revision %s\n%s", s.revision, changeSummary(s.result.Changes, s.pruned))
		for _, c := range s.result.Changes {
			if c.Action != "unchanged" {
				applyChangesTotal.WithLabelValues(c.Action).Inc()
			}
		}
		applyChangesTotal.WithLabelValues("deleted").Add(float64(len(s.pruned)))
	}
	// History records syncs that did something or failed, and each new revision; a
	// no-change resync writes nothing.
	newRevision := len(app.Status.History) == 0 || app.Status.History[0].Revision != s.revision
	if s.attempted && (changed || failed || newRevision) {
		entry := gitsyncv1.SyncHistoryEntry{Revision: s.revision, StartedAt: s.started, Result: gitsyncv1.SyncResultSucceeded}
		finished := metav1.NewTime(r.now())
		entry.FinishedAt = &finished
		if failed {
			entry.Result = gitsyncv1.SyncResultFailed
			entry.Message = conditions.GetMessage(app, gitsyncv1.ReadyCondition)
		}
		if s.result != nil {
			entry.Created, entry.Configured, entry.Unchanged = s.result.Count("created"), s.result.Count("configured"), s.result.Count("unchanged")
		}
		entry.Pruned = len(s.pruned)
		app.Status.History = append([]gitsyncv1.SyncHistoryEntry{entry}, app.Status.History...)
		if len(app.Status.History) > maxHistory {
			app.Status.History = app.Status.History[:maxHistory]
		}
		syncsTotal.WithLabelValues(entry.Result).Inc()
	}
}

const maxHistory = 10

// notReady stops the steps with Ready=False while the source is not ready; the source's
// watch brings the Application back, and RetryInterval in case the event was missed.
func (r *ApplicationReconciler) notReady(s *syncRun, reason, msg string) (ctrl.Result, error) {
	conditions.MarkFalse(s.app, gitsyncv1.ReadyCondition, reason, "%s", msg)
	conditions.Delete(s.app, gitsyncv1.ReconcilingCondition)
	s.stop = true
	return ctrl.Result{RequeueAfter: r.retryInterval()}, nil
}

// stalledRevision fails a revision that retrying cannot fix (a broken render, a refused
// prune, a conflict): Ready=False, a Warning event, and a look again at the interval
// (or sooner, when the source or the spec changes).
func (r *ApplicationReconciler) stalledRevision(s *syncRun, reason, msg string) (ctrl.Result, error) {
	r.warn(s, reason, msg)
	s.stop = true
	return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
}

// failRevision fails a revision for a reason that may pass (API errors, timeouts): the
// error goes back to the rate-limited queue.
func (r *ApplicationReconciler) failRevision(s *syncRun, reason string, err error) (ctrl.Result, error) {
	r.warn(s, reason, err.Error())
	return ctrl.Result{}, err
}

func (r *ApplicationReconciler) warn(s *syncRun, reason, msg string) {
	app := s.app
	s.failure = reason
	if !conditions.IsFalse(app, gitsyncv1.ReadyCondition) || conditions.GetReason(app, gitsyncv1.ReadyCondition) != reason ||
		conditions.GetMessage(app, gitsyncv1.ReadyCondition) != msg {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, reason, "Sync", "%s", msg)
	}
	conditions.MarkFalse(app, gitsyncv1.ReadyCondition, reason, "%s", msg)
	conditions.Delete(app, gitsyncv1.ReconcilingCondition)
}

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
			pruned, err := manager.Prune(ctx, apply.Stale(entries, nil))
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

func (r *ApplicationReconciler) isNamespaced(gk schema.GroupKind) (bool, error) {
	mapping, err := r.Mapper.RESTMapping(gk)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (r *ApplicationReconciler) requeueAfter(s *syncRun) time.Duration {
	d := s.app.GetInterval().Duration
	// Until everything is healthy, look again soon (there is no watch on health yet).
	if s.health != nil && s.health.Status != gitsyncv1.HealthStatusHealthy && d > 15*time.Second {
		d = 15 * time.Second
	}
	if r.Jitter != nil {
		d += r.Jitter(d)
	}
	return d
}

func (r *ApplicationReconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return 5 * time.Second
}

func (r *ApplicationReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func sourceKey(app *gitsyncv1.Application) types.NamespacedName {
	ns := app.Spec.SourceRef.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: app.Spec.SourceRef.Name}
}

func autoSync(app *gitsyncv1.Application) bool {
	return app.Spec.AutoSync == nil || *app.Spec.AutoSync
}

func pathOf(app *gitsyncv1.Application) string {
	if app.Spec.Path == "" {
		return "./"
	}
	return app.Spec.Path
}

func inventoryEntries(app *gitsyncv1.Application) []apply.Entry {
	if app.Status.Inventory == nil {
		return nil
	}
	entries := make([]apply.Entry, 0, len(app.Status.Inventory.Entries))
	for _, e := range app.Status.Inventory.Entries {
		entries = append(entries, apply.Entry{ID: e.ID, Version: e.V})
	}
	return entries
}

func setInventory(app *gitsyncv1.Application, entries []apply.Entry) {
	inv := &gitsyncv1.Inventory{Entries: make([]gitsyncv1.InventoryEntry, 0, len(entries))}
	for _, e := range entries {
		inv.Entries = append(inv.Entries, gitsyncv1.InventoryEntry{ID: e.ID, V: e.Version})
	}
	app.Status.Inventory = inv
}

// union returns a followed by the entries of b not in a.
func union(a, b []apply.Entry) []apply.Entry {
	seen := make(map[string]bool, len(a))
	out := append([]apply.Entry{}, a...)
	for _, e := range a {
		seen[e.ID] = true
	}
	for _, e := range b {
		if !seen[e.ID] {
			out = append(out, e)
			seen[e.ID] = true
		}
	}
	return out
}

// changeSummary lists what changed, one "Subject action" per line, for events.
func changeSummary(changes, pruned []apply.Change) string {
	var lines []string
	for _, c := range append(append([]apply.Change{}, changes...), pruned...) {
		if c.Action != "unchanged" {
			lines = append(lines, c.Subject+" "+c.Action)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
