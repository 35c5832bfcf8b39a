package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

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

// Lock takes the Application's drift lock and returns its release: a sync holds it from
// before its apply until Applied has recorded the new desired state, a drift check
// around its comparisons and corrections.
func (r *DriftReconciler) Lock(app types.NamespacedName) (unlock func()) {
	l := r.lockOf(app)
	l.Lock()
	return l.Unlock
}

// tryLock takes the Application's drift lock if it is free (a drift check does not hold
// a worker while a sync applies).
func (r *DriftReconciler) tryLock(app types.NamespacedName) (unlock func(), ok bool) {
	l := r.lockOf(app)
	if !l.TryLock() {
		return nil, false
	}
	return l.Unlock, true
}

func (r *DriftReconciler) lockOf(app types.NamespacedName) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.locks[app]
	if !ok {
		l = &sync.Mutex{}
		r.locks[app] = l
	}
	return l
}

const (
	checkRetryBase = time.Second
	checkRetryMax  = 5 * time.Minute
)

// checkFailed counts a failed drift check of the object and returns how long its next
// check waits: 1s, doubling at each failure in a row, at most 5m.
func (r *DriftReconciler) checkFailed(ref drift.ObjectRef) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := backoff(checkRetryBase, checkRetryMax, r.failures[ref])
	r.failures[ref]++
	r.retryAt[ref] = r.now().Add(wait)
	return wait
}

// checkSucceeded resets the object's backoff.
func (r *DriftReconciler) checkSucceeded(ref drift.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, ref)
	delete(r.retryAt, ref)
}

// failureBackoffLeft is how long the object's next check must still wait after failures.
func (r *DriftReconciler) failureBackoffLeft(ref drift.ObjectRef) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.retryAt[ref]; ok {
		if left := t.Sub(r.now()); left > 0 {
			return left
		}
	}
	return 0
}

// CheckAll marks the desired objects of the Application for a check (after its desired
// state was restored from the last applied revision, whose objects may have drifted
// while no one watched), at low priority: part of a cold start. An object whose cached
// metadata shows it untouched since gitsync applied it (drift.Untouched) needs no
// check: a restart with nothing changed reads no object.
func (r *DriftReconciler) CheckAll(app types.NamespacedName) {
	r.mu.Lock()
	var marked int
	for _, d := range r.desired[app] {
		ref := d.ref
		if m, ok := r.Watches.Cached(ref); ok {
			if o, err := d.object(); err == nil && drift.Untouched(o, m, app) {
				continue
			}
		}
		if r.pending[app] == nil {
			r.pending[app] = map[drift.ObjectRef]bool{}
		}
		r.pending[app][ref] = true
		marked++
	}
	r.mu.Unlock()
	if marked == 0 {
		return
	}
	r.wakeLater <- event.GenericEvent{Object: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}}
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
// The kinds stay watched until the Application's Applied or Forget, so that another
// Application's sync meanwhile does not stop them. The wait for the watches is bounded.
func (r *DriftReconciler) Prepare(ctx context.Context, app types.NamespacedName, objs []*unstructured.Unstructured) {
	prepared := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		prepared[o.GroupVersionKind()] = true
	}
	r.mu.Lock()
	r.setKinds(r.prepared, app, prepared)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	// Kinds whose CRD is in this very render fail until it is applied; Applied retries.
	_ = r.Watches.Sync(ctx, r.kinds())
}

// prepareTimeout bounds Prepare's wait for new watches to list their objects.
const prepareTimeout = 30 * time.Second

// Applied records the objects of a successful sync as the Application's desired state,
// makes the watched kinds those of every recorded Application, and notes each object's
// fingerprint for the backstop.
func (r *DriftReconciler) Applied(ctx context.Context, app types.NamespacedName, objs []*unstructured.Unstructured) error {
	byID := make(map[string]storedObject, len(objs))
	kinds := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return fmt.Errorf("recording %s: %w", apply.Subject(o), err)
		}
		byID[apply.EntryOf(o).ID] = storedObject{ref: objectRef(o), raw: raw}
		kinds[o.GroupVersionKind()] = true
	}
	r.mu.Lock()
	r.desired[app] = byID
	r.setKinds(r.desiredKinds, app, kinds)
	delete(r.unsure, app)
	r.setKinds(r.prepared, app, nil)
	for _, o := range objs {
		delete(r.drifted, objectRef(o)) // a sync applied every object: status.drift is cleared
	}
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
	for _, d := range r.desired[app] {
		delete(r.seen, d.ref)
		delete(r.drifted, d.ref)
		delete(r.failures, d.ref)
		delete(r.retryAt, d.ref)
	}
	delete(r.desired, app)
	r.setKinds(r.desiredKinds, app, nil)
	delete(r.unsure, app)
	r.setKinds(r.prepared, app, nil)
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
	for _, d := range objs {
		ref := d.ref
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

// kinds returns the kinds to watch: those of some Application's desired objects or of
// a sync under way.
func (r *DriftReconciler) kinds() map[schema.GroupVersionKind]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make(map[schema.GroupVersionKind]bool, len(r.kindUsers))
	for gvk := range r.kindUsers {
		kinds[gvk] = true
	}
	return kinds
}

// setKinds makes kinds the Application's entry of byApp (desiredKinds or prepared; nil
// removes it) and keeps kindUsers, the number of entries naming each kind, in step.
// The caller holds r.mu.
func (r *DriftReconciler) setKinds(byApp map[types.NamespacedName]map[schema.GroupVersionKind]bool, app types.NamespacedName, kinds map[schema.GroupVersionKind]bool) {
	for gvk := range byApp[app] {
		if r.kindUsers[gvk]--; r.kindUsers[gvk] <= 0 {
			delete(r.kindUsers, gvk)
		}
	}
	delete(byApp, app)
	if kinds == nil {
		return
	}
	byApp[app] = kinds
	for gvk := range kinds {
		r.kindUsers[gvk]++
	}
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
	d, ok := objs[refID(ref)]
	if !ok {
		return nil, true
	}
	obj, err := d.object()
	if err != nil {
		return nil, true // recorded from a valid object: cannot happen
	}
	return obj, true
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

func (r *DriftReconciler) recordSeen(ref drift.ObjectRef) {
	if m, ok := r.Watches.Cached(ref); ok {
		r.mu.Lock()
		r.seen[ref] = drift.Fingerprint(m)
		r.mu.Unlock()
	}
}

// setDrifted records whether ref is reported as drifted now.
func (r *DriftReconciler) setDrifted(ref drift.ObjectRef, drifted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if drifted {
		r.drifted[ref] = true
	} else {
		delete(r.drifted, ref)
	}
}

// isDrifted tells whether ref is reported as drifted now (the watches check any change of it).
func (r *DriftReconciler) isDrifted(ref drift.ObjectRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drifted[ref]
}
