package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// DriftReconciler keeps the cluster equal to the last applied revision between syncs:
// the watches report changes others made to managed objects; it compares each changed
// object with Git's version (one GET and one server-side dry-run), reports the drift in
// status.drift and, with selfHeal, re-applies just that object.
type DriftReconciler struct {
	client.Client
	Applier  func(app *gitsyncv1.Application) (*apply.Manager, error)
	Recorder recorder.EventRecorder
	Watches  *drift.Watches
	Fights   *drift.Fights
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// wake asks for a drift reconcile of an Application; resync asks the Application
	// controller for a full sync (when no render of the Application is in memory).
	wake   chan event.GenericEvent
	resync chan event.GenericEvent

	mu      sync.Mutex
	desired map[types.NamespacedName]map[string]*unstructured.Unstructured // by inventory ID
	pending map[types.NamespacedName]map[drift.ObjectRef]bool
	// seen holds each object's drift.Fingerprint as of its last check, for the backstop.
	seen map[drift.ObjectRef]string
	// notBefore holds, per fought-over object, when the next correction may happen.
	notBefore map[string]time.Time
}

// NewDriftReconciler returns a DriftReconciler; SetupWithManager completes it.
func NewDriftReconciler() *DriftReconciler {
	return &DriftReconciler{
		wake:      make(chan event.GenericEvent, 4096),
		resync:    make(chan event.GenericEvent, 1024),
		desired:   map[types.NamespacedName]map[string]*unstructured.Unstructured{},
		pending:   map[types.NamespacedName]map[drift.ObjectRef]bool{},
		seen:      map[drift.ObjectRef]string{},
		notBefore: map[string]time.Time{},
	}
}

func (r *DriftReconciler) backoffLeft(key string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.notBefore[key]; ok && now.Before(t) {
		return t.Sub(now)
	}
	return 0
}

func (r *DriftReconciler) setBackoff(key string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notBefore[key] = t
}

// OnEvent is the watches' handler: it marks the object and wakes its Application.
func (r *DriftReconciler) OnEvent(e drift.Event) {
	r.markPending(e.Owner, e.Object)
}

func (r *DriftReconciler) markPending(app types.NamespacedName, ref drift.ObjectRef) {
	r.mu.Lock()
	if r.pending[app] == nil {
		r.pending[app] = map[drift.ObjectRef]bool{}
	}
	r.pending[app][ref] = true
	r.mu.Unlock()
	r.wake <- event.GenericEvent{Object: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}}
}

// Prepare starts the watches of the kinds of objs (those the API server knows already)
// before they are applied, so that the first change after the apply is seen.
func (r *DriftReconciler) Prepare(ctx context.Context, objs []*unstructured.Unstructured) {
	kinds := r.kinds()
	for _, o := range objs {
		kinds[o.GroupVersionKind()] = true
	}
	// Kinds whose CRD is in this very render fail until it is applied; Applied retries.
	_ = r.Watches.Sync(ctx, kinds)
}

// Applied records the objects of a successful sync as the Application's desired state,
// makes the watched kinds those of every recorded Application, and notes each object's
// fingerprint for the backstop.
func (r *DriftReconciler) Applied(ctx context.Context, app types.NamespacedName, objs []*unstructured.Unstructured) error {
	byID := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		byID[apply.EntryOf(o).ID] = o.DeepCopy()
	}
	r.mu.Lock()
	r.desired[app] = byID
	r.mu.Unlock()
	if err := r.Watches.Sync(ctx, r.kinds()); err != nil {
		return err
	}
	for _, o := range objs {
		ref := objectRef(o)
		if m, ok := r.Watches.Cached(ref); ok {
			r.mu.Lock()
			r.seen[ref] = drift.Fingerprint(m)
			r.mu.Unlock()
		}
	}
	return nil
}

// Forget drops an Application (deleted, suspended, or failed to render) and stops the
// watches of kinds no other Application has.
func (r *DriftReconciler) Forget(ctx context.Context, app types.NamespacedName) {
	r.mu.Lock()
	for _, o := range r.desired[app] {
		delete(r.seen, objectRef(o))
	}
	delete(r.desired, app)
	delete(r.pending, app)
	r.mu.Unlock()
	_ = r.Watches.Sync(ctx, r.kinds())
}

// Tracked tells whether the Application's desired state is in memory.
func (r *DriftReconciler) Tracked(app types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.desired[app]
	return ok
}

// Backstop compares the watch cache with what the last checks saw: an object missing
// from the cache, or whose other writers changed since, is checked as if an event had
// come. It makes no API request. It returns the number of objects it marked.
func (r *DriftReconciler) Backstop(app types.NamespacedName) int {
	r.mu.Lock()
	objs := r.desired[app]
	var marked []drift.ObjectRef
	for _, o := range objs {
		ref := objectRef(o)
		m, ok := r.Watches.Cached(ref)
		switch {
		case !ok:
			marked = append(marked, ref)
		default:
			fp := drift.Fingerprint(m)
			if prev, known := r.seen[ref]; !known {
				r.seen[ref] = fp
			} else if prev != fp {
				marked = append(marked, ref)
			}
		}
	}
	r.mu.Unlock()
	for _, ref := range marked {
		r.markPending(app, ref)
	}
	return len(marked)
}

func (r *DriftReconciler) kinds() map[schema.GroupVersionKind]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := map[schema.GroupVersionKind]bool{}
	for _, objs := range r.desired {
		for _, o := range objs {
			kinds[o.GroupVersionKind()] = true
		}
	}
	return kinds
}

func (r *DriftReconciler) takePending(app types.NamespacedName) []drift.ObjectRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	refs := make([]drift.ObjectRef, 0, len(r.pending[app]))
	for ref := range r.pending[app] {
		refs = append(refs, ref)
	}
	delete(r.pending, app)
	sort.Slice(refs, func(i, j int) bool { return refID(refs[i]) < refID(refs[j]) })
	return refs
}

func (r *DriftReconciler) desiredObject(app types.NamespacedName, ref drift.ObjectRef) (*unstructured.Unstructured, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	objs, tracked := r.desired[app]
	if !tracked {
		return nil, false
	}
	return objs[refID(ref)], true
}

// Reconcile checks the Application's changed objects. Status is written only when the
// drift report changes.
func (r *DriftReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	refs := r.takePending(req.NamespacedName)
	if len(refs) == 0 {
		return ctrl.Result{}, nil
	}
	app := &gitsyncv1.Application{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.Spec.Suspend || !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if !r.Tracked(req.NamespacedName) {
		// No render in memory (a restart): a full sync rebuilds it.
		r.resync <- event.GenericEvent{Object: app}
		return ctrl.Result{}, nil
	}
	manager, err := r.Applier(app)
	if err != nil {
		return ctrl.Result{}, err
	}

	before := app.DeepCopy()
	var retry time.Duration
	for _, ref := range refs {
		obj, _ := r.desiredObject(req.NamespacedName, ref)
		if obj == nil {
			continue // no longer in Git: prune's business
		}
		delay, err := r.check(ctx, app, manager, ref, obj)
		if err != nil {
			log.Error(err, "checking drift", "object", apply.Subject(obj))
			r.markPendingQuiet(req.NamespacedName, ref)
			retry = time.Second
			continue
		}
		if delay > 0 {
			r.markPendingQuiet(req.NamespacedName, ref)
			if retry == 0 || delay < retry {
				retry = delay
			}
		}
	}
	r.setSyncStatus(app)
	if err := r.patchStatus(ctx, before, app); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// markPendingQuiet marks an object for the next reconcile without waking it now.
func (r *DriftReconciler) markPendingQuiet(app types.NamespacedName, ref drift.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[app] == nil {
		r.pending[app] = map[drift.ObjectRef]bool{}
	}
	r.pending[app][ref] = true
}

// check compares one object with Git, reports it, and corrects it with selfHeal unless a
// fight says to wait; it returns how long to wait before looking again (0: no need).
func (r *DriftReconciler) check(ctx context.Context, app *gitsyncv1.Application, manager *apply.Manager, ref drift.ObjectRef, obj *unstructured.Unstructured) (time.Duration, error) {
	subject := apply.Subject(obj)
	live, desired, err := manager.Compare(ctx, obj)
	if err != nil {
		return 0, err
	}
	var fields []drift.Field
	if live == nil {
		fields = []drift.Field{{Path: "(deleted)"}}
	} else {
		fields, err = drift.Diff(live, desired, ignorePointers(app, obj))
		if err != nil {
			return 0, err
		}
		r.recordSeen(ref)
	}
	if len(fields) == 0 {
		removeDrift(app, subject)
		return 0, nil
	}

	now := r.now()
	entry := driftEntry(subject, fields, now)
	if existing := findDrift(app, subject); existing != nil {
		entry.DetectedAt = existing.DetectedAt
	} else {
		driftDetectedTotal.Inc()
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, "DriftDetected", "Drift",
			"%s: %s (by %s)", subject, strings.Join(entry.Fields, ", "), managersText(entry.Managers))
	}
	setDrift(app, entry)
	if app.Spec.SelfHeal != nil && !*app.Spec.SelfHeal {
		return 0, nil // report only
	}

	key := app.Namespace + "/" + app.Name + "/" + subject
	if wait := r.backoffLeft(key, now); wait > 0 {
		return wait, nil // fighting: the next correction waits
	}
	if current, _ := r.desiredObject(client.ObjectKeyFromObject(app), ref); current == nil {
		return 0, nil // a sync removed it from Git meanwhile: a prune, not drift
	}
	if err := manager.Correct(ctx, obj); err != nil {
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
	driftCorrectedTotal.Inc()
	driftCorrectionSeconds.Observe(r.now().Sub(entry.DetectedAt.Time).Seconds())
	r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "DriftCorrected", "Drift",
		"%s: %s restored from Git", subject, strings.Join(entry.Fields, ", "))
	removeDrift(app, subject)
	return 0, nil
}

func (r *DriftReconciler) recordSeen(ref drift.ObjectRef) {
	if m, ok := r.Watches.Cached(ref); ok {
		r.mu.Lock()
		r.seen[ref] = drift.Fingerprint(m)
		r.mu.Unlock()
	}
}

// setSyncStatus marks the Application OutOfSync while drift is reported, and Synced
// again when it is gone (at the revision last applied).
func (r *DriftReconciler) setSyncStatus(app *gitsyncv1.Application) {
	if app.Status.Sync == nil || app.Status.Sync.Revision != app.Status.LastAppliedRevision {
		return
	}
	if len(app.Status.Drift) > 0 {
		app.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
	} else {
		app.Status.Sync.Status = gitsyncv1.SyncStatusSynced
	}
}

func (r *DriftReconciler) patchStatus(ctx context.Context, before, app *gitsyncv1.Application) error {
	if equalDrift(before, app) {
		return nil
	}
	// Only status.drift and status.sync change here; a merge patch leaves the rest to
	// the Application controller.
	patch := client.MergeFrom(before)
	if err := r.Status().Patch(ctx, app, patch, client.FieldOwner(gitsyncv1.FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func (r *DriftReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func equalDrift(a, b *gitsyncv1.Application) bool {
	if len(a.Status.Drift) != len(b.Status.Drift) {
		return false
	}
	for i := range a.Status.Drift {
		x, y := a.Status.Drift[i], b.Status.Drift[i]
		if x.Object != y.Object || !x.DetectedAt.Equal(&y.DetectedAt) ||
			strings.Join(x.Fields, ",") != strings.Join(y.Fields, ",") ||
			strings.Join(x.Managers, ",") != strings.Join(y.Managers, ",") {
			return false
		}
	}
	as, bs := a.Status.Sync, b.Status.Sync
	return (as == nil) == (bs == nil) && (as == nil || *as == *bs)
}

func driftEntry(subject string, fields []drift.Field, now time.Time) gitsyncv1.DriftedObject {
	entry := gitsyncv1.DriftedObject{Object: subject, DetectedAt: metav1.NewTime(now)}
	managers := map[string]bool{}
	for _, f := range fields {
		entry.Fields = append(entry.Fields, f.Path)
		for _, m := range f.Managers {
			managers[m] = true
		}
	}
	for m := range managers {
		entry.Managers = append(entry.Managers, m)
	}
	sort.Strings(entry.Managers)
	return entry
}

func findDrift(app *gitsyncv1.Application, subject string) *gitsyncv1.DriftedObject {
	for i := range app.Status.Drift {
		if app.Status.Drift[i].Object == subject {
			return &app.Status.Drift[i]
		}
	}
	return nil
}

func setDrift(app *gitsyncv1.Application, entry gitsyncv1.DriftedObject) {
	if existing := findDrift(app, entry.Object); existing != nil {
		*existing = entry
		return
	}
	app.Status.Drift = append(app.Status.Drift, entry)
	sort.Slice(app.Status.Drift, func(i, j int) bool { return app.Status.Drift[i].Object < app.Status.Drift[j].Object })
}

func removeDrift(app *gitsyncv1.Application, subject string) {
	out := app.Status.Drift[:0:0]
	for _, d := range app.Status.Drift {
		if d.Object != subject {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	app.Status.Drift = out
}

func managersText(managers []string) string {
	if len(managers) == 0 {
		return "unknown manager"
	}
	return strings.Join(managers, ", ")
}

// ignorePointers returns the JSON pointers of spec.ignoreDifferences that apply to obj.
func ignorePointers(app *gitsyncv1.Application, obj *unstructured.Unstructured) []string {
	var pointers []string
	gvk := obj.GroupVersionKind()
	for _, rule := range app.Spec.IgnoreDifferences {
		if rule.Group != gvk.Group || rule.Kind != gvk.Kind {
			continue
		}
		if rule.Name != "" && rule.Name != obj.GetName() {
			continue
		}
		if rule.Namespace != "" && rule.Namespace != obj.GetNamespace() {
			continue
		}
		pointers = append(pointers, rule.JSONPointers...)
	}
	return pointers
}

func objectRef(obj *unstructured.Unstructured) drift.ObjectRef {
	return drift.ObjectRef{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// refID is the inventory ID of a reference ("<namespace>_<name>_<group>_<kind>").
func refID(ref drift.ObjectRef) string {
	return fmt.Sprintf("%s_%s_%s_%s", ref.Namespace, ref.Name, ref.GVK.Group, ref.GVK.Kind)
}
