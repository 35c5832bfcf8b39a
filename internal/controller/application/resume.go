package application

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/phase"
)

// An ordered sync does not hold a worker while it waits for a hook or a wave: the
// Runner waits in the worker for a short while (waitInWorker: the common quick hook or
// wave costs no extra round), then yields. The reconcile records where the run stands
// in status.syncProgress (revision, generation, start, waves applied) and status.hooks
// (the hooks created, the awaited ones Running), and comes back after a short, growing
// delay (waitRequeue). The next reconcile of the same revision and generation resumes
// the run from there: no hook is created twice, no wave applied twice, and the run's
// timeout counts from startedAt. A new revision or spec, or a sync request that asks for
// the hooks, supersedes it: that reconcile starts a run of its own, as a sync after a
// finished one does.
//
// Nothing wakes a waiting sync when its hook changes: a watch of hooks would also wake
// an Application whose run has just ended (the event and the run's status race through
// the cache), and a reconcile then retries a failed revision at once, hooks included,
// instead of at the interval. The requeue alone looks at least every 5 s.

// defaultWaitInWorker is how long a sync waits in its worker before it yields.
const defaultWaitInWorker = 2 * time.Second

func (r *Reconciler) waitInWorker() time.Duration {
	if r.WaitInWorker > 0 {
		return r.WaitInWorker
	}
	return defaultWaitInWorker
}

// waitRequeue is how soon a waiting sync looks again: a quarter of how long it has
// waited, from 1 s up to 5 s (a hook that takes a minute is looked at every 5 s).
func waitRequeue(waited time.Duration) time.Duration {
	return min(max(waited/4, time.Second), 5*time.Second)
}

// resumable returns the progress of the sync the reconcile resumes: that of the
// revision and spec generation it syncs (nil when none, when it is another's, or when a
// new sync request asks for the hooks: that starts a run of its own).
func resumable(s *syncRun) *gitsyncv1.SyncProgress {
	p := s.app.Status.SyncProgress
	if p == nil || p.Revision != s.revision || p.Generation != s.app.Generation || hooksRequested(s.app) {
		return nil
	}
	return p
}

// resumeState is the phase.State of progress p: the hooks come from status.hooks.
func resumeState(app *gitsyncv1.Application, p *gitsyncv1.SyncProgress) *phase.State {
	st := &phase.State{Started: p.StartedAt.Time, Applied: p.AppliedWaves, Created: p.Created, Configured: p.Configured,
		Failure: p.Failure, FailedPhase: p.FailedPhase}
	if p.FailedAt != nil {
		st.FailedAt = p.FailedAt.Time
	}
	if p.Hooks {
		for _, h := range app.Status.Hooks {
			st.Hooks = append(st.Hooks, phase.HookRun{Kind: h.Kind, Namespace: h.Namespace, Name: h.Name,
				Phase: h.Phase, Result: h.Result, Message: h.Message})
		}
	}
	return st
}

// saveWaiting records a run that yields: status.syncProgress, and the hooks so far.
func (r *Reconciler) saveWaiting(s *syncRun, hooks bool, st *phase.State) {
	p := &gitsyncv1.SyncProgress{Revision: s.revision, Generation: s.app.Generation, StartedAt: metav1.NewMicroTime(st.Started),
		Hooks: hooks, Prune: s.prune, AppliedWaves: st.Applied, Created: st.Created, Configured: st.Configured,
		Failure: st.Failure, FailedPhase: st.FailedPhase}
	if !st.FailedAt.IsZero() {
		at := metav1.NewMicroTime(st.FailedAt)
		p.FailedAt = &at
	}
	s.app.Status.SyncProgress = p
	if hooks {
		r.recordHooks(s, st.Hooks)
	}
	s.waiting = true
}

// heldLock is the Application's drift lock (internal/desired) as one reconcile holds
// it. A sync that yields keeps it until the run ends, as a run that waits in its worker
// does: no drift correction writes the previous revision's objects over the waves this
// run applied, and the waves need not be applied again when it resumes.
type heldLock struct {
	unlock func()
	// held tells that the lock was kept by the reconcile before; keep, that this one
	// keeps it for the next.
	held, keep bool
}

// heldLocks holds the drift locks of the syncs that yielded, by Application.
type heldLocks struct {
	mu    sync.Mutex
	locks map[types.NamespacedName]func()
}

func (h *heldLocks) take(key types.NamespacedName) *heldLock {
	h.mu.Lock()
	defer h.mu.Unlock()
	unlock := h.locks[key]
	delete(h.locks, key)
	return &heldLock{unlock: unlock, held: unlock != nil}
}

// release keeps l for the next reconcile when its sync yielded, and unlocks it otherwise.
func (h *heldLocks) release(key types.NamespacedName, l *heldLock) {
	if l.unlock == nil {
		return
	}
	if !l.keep {
		l.unlock()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = map[types.NamespacedName]func(){}
	}
	h.locks[key] = l.unlock
}

// hookEvent emits the event of a hook that finished.
func (r *Reconciler) hookEvent(s *syncRun, h phase.HookRun) {
	subject := h.Kind + "/" + h.Name
	s.log.Info("hook", "phase", h.Phase, "object", subject, "result", h.Result, "revision", s.revision)
	if h.Result == phase.HookSucceeded {
		r.Recorder.Eventf(s.app, nil, corev1.EventTypeNormal, "HookSucceeded", "Sync", "%s hook %s succeeded", h.Phase, subject)
	} else {
		r.Recorder.Eventf(s.app, nil, corev1.EventTypeWarning, gitsyncv1.HookFailedReason, "Sync", "%s hook %s failed: %s", h.Phase, subject, h.Message)
	}
}
