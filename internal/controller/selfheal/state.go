package selfheal

import (
	"encoding/binary"
	"hash/maphash"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// BackoffLeft is how long the next correction of a fought-over object (key
// "<namespace>/<app>/<subject>") must still wait.
func (r *Reconciler) BackoffLeft(key string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.notBefore[key]; ok && now.Before(t) {
		return t.Sub(now)
	}
	return 0
}

func (r *Reconciler) setBackoff(key string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notBefore[key] = t
}

const (
	checkRetryBase = time.Second
	checkRetryMax  = 5 * time.Minute
)

// checkFailed counts a failed drift check of the object and returns how long its next
// check waits: 1s, doubling at each failure in a row, at most 5m.
func (r *Reconciler) checkFailed(ref drift.ObjectRef) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := kit.Backoff(checkRetryBase, checkRetryMax, r.failures[ref])
	r.failures[ref]++
	r.retryAt[ref] = r.now().Add(wait)
	return wait
}

// Failures counts the drift checks of ref that failed in a row.
func (r *Reconciler) Failures(ref drift.ObjectRef) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[ref]
}

// checkSucceeded resets the object's backoff.
func (r *Reconciler) checkSucceeded(ref drift.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, ref)
	delete(r.retryAt, ref)
}

// failureBackoffLeft is how long the object's next check must still wait after failures.
func (r *Reconciler) failureBackoffLeft(ref drift.ObjectRef) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.retryAt[ref]; ok {
		if left := t.Sub(r.now()); left > 0 {
			return left
		}
	}
	return 0
}

// OnEvent is the watches' handler: it marks the object and wakes its Application.
func (r *Reconciler) OnEvent(e drift.Event) {
	r.markPending(e.Owner, e.Object)
}

func (r *Reconciler) markPending(app types.NamespacedName, ref drift.ObjectRef) {
	r.markPendingQuiet(app, ref)
	r.wake <- appEvent(app)
}

func appEvent(app types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}}
}

// The Reconciler is the desired.Listener of the Store: the methods below are how
// the sync's side reaches it.
var _ desired.Listener = (*Reconciler)(nil)

// CheckAll marks the objects for a check at low priority (part of a cold start).
func (r *Reconciler) CheckAll(app types.NamespacedName, refs []drift.ObjectRef) {
	for _, ref := range refs {
		r.markPendingQuiet(app, ref)
	}
	r.wakeLater <- appEvent(app)
}

// Applied clears the drift reports of the objects a sync has just applied and notes each
// object's fingerprint for the backstop.
func (r *Reconciler) Applied(app types.NamespacedName, refs []drift.ObjectRef) {
	r.mu.Lock()
	for _, ref := range refs {
		delete(r.drifted, ref) // a sync applied every object: status.drift is cleared
	}
	r.mu.Unlock()
	for _, ref := range refs {
		r.recordSeen(ref)
	}
}

// Forgotten drops the bookkeeping of an Application's objects.
func (r *Reconciler) Forgotten(app types.NamespacedName, refs []drift.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		delete(r.seen, seenKey(ref))
		delete(r.drifted, ref)
		delete(r.failures, ref)
		delete(r.retryAt, ref)
	}
	delete(r.pending, app)
}

// Busy tells whether a check of the object is pending, reported or failing.
func (r *Reconciler) Busy(app types.NamespacedName, ref drift.ObjectRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[app][ref] || r.drifted[ref] || r.failures[ref] > 0
}

// Backstop compares the watch cache with what the last checks saw: an object missing
// from the cache, or whose other writers changed since, is checked as if an event had
// come. It makes no API request. It returns the number of objects it marked.
func (r *Reconciler) Backstop(app types.NamespacedName, refs []drift.ObjectRef) int {
	var marked []drift.ObjectRef
	r.mu.Lock()
	for _, ref := range refs {
		m, ok := r.Watches.Cached(ref)
		switch {
		case !ok:
			marked = append(marked, ref)
		default:
			key, fp := seenKey(ref), seenPrint(m)
			if prev, known := r.seen[key]; !known {
				r.seen[key] = fp
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

func (r *Reconciler) takePending(app types.NamespacedName) []drift.ObjectRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	refs := make([]drift.ObjectRef, 0, len(r.pending[app]))
	for ref := range r.pending[app] {
		refs = append(refs, ref)
	}
	delete(r.pending, app)
	sort.Slice(refs, func(i, j int) bool { return refs[i].ID() < refs[j].ID() })
	return refs
}

// markPendingQuiet marks an object for the next reconcile without waking it now.
func (r *Reconciler) markPendingQuiet(app types.NamespacedName, ref drift.ObjectRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[app] == nil {
		r.pending[app] = map[drift.ObjectRef]bool{}
	}
	r.pending[app][ref] = true
}

// seenKey is the key of ref in seen: a 64-bit hash of its kind, namespace and name
// (seeded per process: seen lives in memory only).
func seenKey(ref drift.ObjectRef) uint64 {
	var h maphash.Hash
	h.SetSeed(seenSeed)
	for _, s := range []string{ref.GVK.Group, ref.GVK.Version, ref.GVK.Kind, ref.Namespace, ref.Name} {
		_, _ = h.WriteString(s)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}

var seenSeed = maphash.MakeSeed()

// seenPrint is what seen keeps of m's drift.Fingerprint: its first 64 bits.
func seenPrint(m *drift.Meta) uint64 {
	fp := drift.Fingerprint(m)
	return binary.BigEndian.Uint64(fp[:])
}

func (r *Reconciler) recordSeen(ref drift.ObjectRef) {
	if m, ok := r.Watches.Cached(ref); ok {
		r.mu.Lock()
		r.seen[seenKey(ref)] = seenPrint(m)
		r.mu.Unlock()
	}
}

// setDrifted records whether ref is reported as drifted now.
func (r *Reconciler) setDrifted(ref drift.ObjectRef, drifted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if drifted {
		r.drifted[ref] = true
	} else {
		delete(r.drifted, ref)
	}
}

// isDrifted tells whether ref is reported as drifted now (the watches check any change of it).
func (r *Reconciler) isDrifted(ref drift.ObjectRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drifted[ref]
}
