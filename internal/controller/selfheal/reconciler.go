// Package selfheal reconciles drift between syncs: the watches report others' changes to
// managed objects, each is compared with internal/desired's object, reported in
// status.drift and, with selfHeal, corrected.
package selfheal

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/syncwindow"
)

// Reconciler keeps the cluster equal to the last applied revision between syncs:
// the watches report changes others made to managed objects; it compares each changed
// object with Git's version (one GET and one server-side dry-run), reports the drift in
// status.drift and, with selfHeal, re-applies just that object.
type Reconciler struct {
	client.Client
	// APIReader reads an Application whose status this reconciler wrote last when the
	// cache has not seen that write yet (its merge patch of status.drift would put the
	// stale list back); SetupWithManager sets it.
	APIReader client.Reader
	written   kit.WrittenVersions
	Applier   func(app *gitsyncv1.Application) (*apply.Manager, error)
	Recorder  recorder.EventRecorder
	Watches   *drift.Watches
	Fights    *drift.Fights
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Shard is the part of the Applications this replica reconciles; the watches also
	// report other shards' objects, which are left to their replica.
	Shard shard.Shard

	// Desired is what was last applied per Application (the sync records it); the
	// drift reconciler is its Listener.
	Desired *desired.Store

	// wake asks for a drift reconcile of an Application (high priority: an object
	// changed), wakeLater for one at low priority (checks after a restart, part of the
	// cold start).
	wake      chan event.GenericEvent
	wakeLater chan event.GenericEvent

	mu      sync.Mutex
	pending map[types.NamespacedName]map[drift.ObjectRef]bool
	// drifted holds the objects reported in some status.drift now: any change of theirs
	// is checked (a writer undoing its own edit must clear the report).
	drifted map[drift.ObjectRef]bool
	// seen holds each object's drift.Fingerprint as of its last check (its first 64 bits),
	// for the backstop, by seenKey (kept for every managed object: 16 bytes an entry, not
	// a reference). Two objects whose keys collide would only be checked at each backstop.
	seen map[uint64]uint64
	// notBefore holds, per fought-over object, when the next correction may happen.
	notBefore map[string]time.Time
	// failures counts, per object, the drift checks that failed in a row, and
	// retryAt says when the next may run (exponential backoff, see checkFailed).
	failures map[drift.ObjectRef]int
	retryAt  map[drift.ObjectRef]time.Time
	// BeforeCorrect, when set (tests), runs between the comparison and the correction.
	BeforeCorrect atomic.Pointer[func(app types.NamespacedName, subject string)]
}

// New returns a Reconciler of the desired state store;
// SetupWithManager completes it (and attaches it to the store).
func New(store *desired.Store) *Reconciler {
	return &Reconciler{
		Desired:   store,
		wake:      make(chan event.GenericEvent, 4096),
		wakeLater: make(chan event.GenericEvent, 4096),
		drifted:   map[drift.ObjectRef]bool{},
		pending:   map[types.NamespacedName]map[drift.ObjectRef]bool{},
		seen:      map[uint64]uint64{},
		notBefore: map[string]time.Time{},
		failures:  map[drift.ObjectRef]int{},
		retryAt:   map[drift.ObjectRef]time.Time{},
	}
}

// Reconcile checks the Application's changed objects. Status is written only when the
// drift report changes.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	refs := r.takePending(req.NamespacedName)
	if len(refs) == 0 {
		return ctrl.Result{}, nil
	}
	app := &gitsyncv1.Application{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.APIReader != nil && r.written.Stale(req.NamespacedName, app.ResourceVersion) {
		if err := r.APIReader.Get(ctx, req.NamespacedName, app); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if app.Spec.Suspend || !app.DeletionTimestamp.IsZero() || !r.Shard.Owns(app) {
		return ctrl.Result{}, nil
	}
	// No sync applies while the checks run, and each reads the desired object only now:
	// a correction never writes the object of a revision a sync has just replaced. While
	// a sync applies, the checks wait for it (after it, they compare with its revision,
	// also when it is the Application's first).
	unlock, ok := r.Desired.TryLock(req.NamespacedName)
	if !ok {
		for _, ref := range refs {
			r.markPendingQuiet(req.NamespacedName, ref)
		}
		return ctrl.Result{RequeueAfter: syncBusyRetry}, nil
	}
	defer unlock()
	if !r.Desired.Tracked(req.NamespacedName) {
		// No render in memory (a restart): a full sync rebuilds it.
		r.Desired.RequestSync(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	manager, err := r.Applier(app)
	if err != nil {
		return ctrl.Result{}, err
	}

	before := app.DeepCopy()
	var retry time.Duration
	later := func(ref drift.ObjectRef, delay time.Duration) {
		r.markPendingQuiet(req.NamespacedName, ref)
		if retry == 0 || delay < retry {
			retry = delay
		}
	}
	for _, ref := range refs {
		if wait := r.failureBackoffLeft(ref); wait > 0 {
			later(ref, wait)
			continue
		}
		obj, _ := r.Desired.Object(req.NamespacedName, ref)
		if obj == nil {
			continue // no longer in Git: prune's business
		}
		delay, err := r.check(ctx, app, manager, ref, obj)
		if drift.KindNotServed(err) {
			// Its CRD is gone: nothing to compare with, nothing to correct until a sync
			// applies it again. Reported once, not retried.
			r.checkSucceeded(ref)
			r.kindNotServed(app, obj)
			continue
		}
		if err != nil {
			wait := r.checkFailed(ref)
			log.Error(err, "checking drift", "object", apply.Subject(obj), "retryIn", wait)
			later(ref, wait)
			continue
		}
		r.checkSucceeded(ref)
		if delay > 0 {
			later(ref, delay)
		}
	}
	r.setSyncStatus(app)
	if err := r.patchStatus(ctx, before, app); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// kindNotServed reports an object whose kind the API server no longer serves in
// status.drift, with a Warning the first time.
func (r *Reconciler) kindNotServed(app *gitsyncv1.Application, obj *unstructured.Unstructured) {
	subject := apply.Subject(obj)
	if existing := findDrift(app, subject); existing != nil && len(existing.Fields) == 1 && existing.Fields[0] == kindNotServedField {
		return
	}
	r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "KindNotServed", "Drift",
		"%s: kind %s is no longer served by the API server (its CustomResourceDefinition was deleted?); a sync that applies it brings it back",
		subject, obj.GroupVersionKind().GroupKind())
	setDrift(app, gitsyncv1.DriftedObject{Object: subject, Fields: []string{kindNotServedField}, DetectedAt: metav1.NewTime(r.now())})
}

// kindNotServedField is the drift report's field of an object whose kind is not served.
const kindNotServedField = "(kind not served)"

// syncBusyRetry is how soon drift checks look again while a sync of the same
// Application applies.
const syncBusyRetry = 250 * time.Millisecond

// check compares one object with Git, reports it, and corrects it with selfHeal unless a
// fight says to wait; it returns how long to wait before looking again (0: no need).
func (r *Reconciler) check(ctx context.Context, app *gitsyncv1.Application, manager *apply.Manager, ref drift.ObjectRef, obj *unstructured.Unstructured) (time.Duration, error) {
	subject := apply.Subject(obj)
	o, err := drift.CompareObject(ctx, manager, subject, obj, app.IgnorePointers(obj))
	if err != nil {
		return 0, err
	}
	fields := o.Fields
	if o.Action == drift.Created {
		fields = []drift.Field{{Path: "(deleted)"}}
	} else {
		r.recordSeen(ref)
	}
	if len(fields) == 0 {
		r.setDrifted(ref, false)
		removeDrift(app, subject)
		return 0, nil
	}

	now := r.now()
	entry := driftEntry(subject, fields, now)
	if existing := findDrift(app, subject); existing != nil {
		entry.DetectedAt = existing.DetectedAt
	} else {
		kit.DriftDetectedTotal.Inc()
		ctrl.LoggerFrom(ctx).Info("drift detected", "object", subject, "fields", entry.Fields, "writers", entry.Managers)
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "DriftDetected", "Drift",
			"%s: %s (by %s)", subject, strings.Join(entry.Fields, ", "), managersText(entry.Managers))
	}
	setDrift(app, entry)
	r.setDrifted(ref, true)
	if app.Spec.SelfHeal != nil && !*app.Spec.SelfHeal {
		return 0, nil // report only
	}
	if heal, until := syncwindow.SelfHeal(app.Spec.SyncWindows, now); !heal {
		// A sync window that holds revisions back says report only: look again when
		// it lets corrections through.
		if until.IsZero() {
			return 0, nil
		}
		return until.Sub(now) + time.Second, nil
	}

	key := app.Namespace + "/" + app.Name + "/" + subject
	if wait := r.BackoffLeft(key, now); wait > 0 {
		return wait, nil // fighting: the next correction waits
	}
	if current, _ := r.Desired.Object(client.ObjectKeyFromObject(app), ref); current == nil {
		return 0, nil // a sync removed it from Git meanwhile: a prune, not drift
	}
	if hook := r.BeforeCorrect.Load(); hook != nil {
		(*hook)(client.ObjectKeyFromObject(app), subject)
	}
	if err := manager.Correct(ctx, obj, app.IgnorePointers(obj)...); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "DriftNotCorrected", "Drift", "%s: %v", subject, err)
			return 0, nil
		}
		return 0, err
	}
	if verdict := r.Fights.Correction(key, fields); verdict.Fight {
		r.setBackoff(key, now.Add(verdict.Delay))
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "DriftFight", "Drift",
			"%s: %s keeps changing %s (%s); the next correction waits %s", subject, verdict.Manager,
			strings.Join(entry.Fields, ", "), verdict.Reason, verdict.Delay)
	}
	kit.DriftCorrectedTotal.Inc()
	ctrl.LoggerFrom(ctx).Info("drift corrected", "object", subject, "fields", entry.Fields, "writers", entry.Managers)
	kit.DriftCorrectionSeconds.Observe(r.now().Sub(entry.DetectedAt.Time).Seconds())
	r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "DriftCorrected", "Drift",
		"%s: %s restored from Git", subject, strings.Join(entry.Fields, ", "))
	r.setDrifted(ref, false)
	removeDrift(app, subject)
	return 0, nil
}

// setSyncStatus marks the Application OutOfSync and not Ready (DriftDetected) while
// drift is reported, and Synced and Ready again when it is gone (at the revision last
// applied); Ready of another reason is the Application controller's.
func (r *Reconciler) setSyncStatus(app *gitsyncv1.Application) {
	if app.Status.Sync == nil || app.Status.Sync.Revision != app.Status.LastAppliedRevision {
		return
	}
	if len(app.Status.Drift) > 0 {
		app.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
		if conditions.IsTrue(app, gitsyncv1.ReadyCondition) || conditions.GetReason(app, gitsyncv1.ReadyCondition) == gitsyncv1.DriftDetectedReason {
			conditions.MarkFalse(app, gitsyncv1.ReadyCondition, gitsyncv1.DriftDetectedReason,
				"%d object(s) differ from revision %s: %s", len(app.Status.Drift), app.Status.LastAppliedRevision, app.Status.Drift[0].Object)
		}
		return
	}
	if conditions.GetReason(app, gitsyncv1.ReadyCondition) == gitsyncv1.PruneSkippedReason {
		return // objects that left Git are still there: OutOfSync until a sync prunes them
	}
	app.Status.Sync.Status = gitsyncv1.SyncStatusSynced
	if conditions.GetReason(app, gitsyncv1.ReadyCondition) == gitsyncv1.DriftDetectedReason {
		kit.MarkApplied(app, app.Status.LastAppliedRevision)
	}
}

func (r *Reconciler) patchStatus(ctx context.Context, before, app *gitsyncv1.Application) error {
	if equalDrift(before, app) {
		return nil
	}
	// Only status.drift and status.sync change here; a merge patch leaves the rest to
	// the Application controller.
	patch := client.MergeFrom(before)
	if err := r.Status().Patch(ctx, app, patch, client.FieldOwner(gitsyncv1.FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.written.Remember(client.ObjectKeyFromObject(app), app.ResourceVersion)
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
