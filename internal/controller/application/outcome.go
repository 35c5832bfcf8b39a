package application

import (
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// outcomeKind is how a step ended.
type outcomeKind int

const (
	// stepDone: the next step runs.
	stepDone outcomeKind = iota
	// stepWait: the steps stop without a failure (waiting for a source, a dependency, a
	// sync request, a hook; or nothing to do) and look again after requeue.
	stepWait
	// stepRetry: the steps stop on a failure that may pass (API errors, timeouts,
	// conflicts): err goes back to the rate-limited queue.
	stepRetry
	// stepStalled: the steps stop on a failure that retrying cannot fix (a broken
	// render, a refused prune, a failed hook, a denied reference): Stalled=True, and a
	// look again at requeue (or when the spec or the source changes).
	stepStalled
)

// outcome is what a step returns; finishOutcome turns it into conditions, events and
// the reconcile's result in one place (after source-controller's internal/error and
// summarize pair).
type outcome struct {
	kind outcomeKind
	// reason and message are Ready=False's. A wait without a reason leaves Ready and
	// Reconciling as they are (a settled Application, a yielded sync, a quiet resync);
	// a retry without one is an error of the reconcile, not of the revision.
	reason, message string
	// err is what a retry hands back to the queue.
	err error
	// requeue is when a wait or a stalled outcome looks again (zero: not by itself).
	requeue time.Duration
	// revisionFailed marks a failure of the revision being synced: a Warning event,
	// sync OutOfSync at it and a Failed history entry (see finish).
	revisionFailed bool
}

func done() outcome { return outcome{} }

// waitFor stops the steps; with a reason, Ready=False says what is waited for.
func waitFor(requeue time.Duration, reason, message string) outcome {
	return outcome{kind: stepWait, reason: reason, message: message, requeue: requeue}
}

// retry stops the steps with an error of the reconcile (backoff); conditions stay.
func retry(err error) outcome { return outcome{kind: stepRetry, err: err} }

// stalled stops the steps on a failure only a change of the spec can lift.
func stalled(reason, message string) outcome {
	return outcome{kind: stepStalled, reason: reason, message: message}
}

// revisionStalled fails a revision that retrying cannot fix (a broken render, a refused
// prune, a failed hook): Ready=False, Stalled=True, a Warning event, and a look again at
// the interval (or sooner, when the source or the spec changes).
func (r *Reconciler) revisionStalled(s *syncRun, reason, msg string) outcome {
	out := stalled(reason, msg)
	out.requeue, out.revisionFailed = r.requeueAfter(s), true
	return out
}

// revisionRetry fails a revision for a reason that may pass (API errors, timeouts,
// conflicts): the error goes back to the rate-limited queue.
func revisionRetry(reason string, err error) outcome {
	return outcome{kind: stepRetry, reason: reason, message: err.Error(), err: err, revisionFailed: true}
}

// finishOutcome records a step's outcome in status (the one place that turns outcomes
// into Ready, Stalled and Reconciling) and returns the reconcile's result; finish then
// records the sync itself (sync status, history, events).
func (s *syncRun) finishOutcome(r *Reconciler, out outcome) (ctrl.Result, error) {
	app := s.app
	out = r.clusterOutcome(s, out) // cluster_step.go: a remote cluster that did not answer
	if out.revisionFailed {
		if !conditions.IsFalse(app, gitsyncv1.ReadyCondition) || conditions.GetReason(app, gitsyncv1.ReadyCondition) != out.reason ||
			conditions.GetMessage(app, gitsyncv1.ReadyCondition) != out.message {
			r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, out.reason, "Sync", "%s", out.message)
			s.log.Info("sync failed", "reason", out.reason, "revision", s.revision, "message", out.message)
		}
	}
	if out.reason != "" {
		conditions.MarkFalse(app, gitsyncv1.ReadyCondition, out.reason, "%s", out.message)
		conditions.Delete(app, gitsyncv1.ReconcilingCondition)
	}
	switch {
	case out.kind == stepStalled:
		conditions.MarkStalled(app, out.reason, "%s", out.message)
	case out.kind == stepRetry && out.reason != "":
		conditions.Delete(app, gitsyncv1.StalledCondition) // a retry may fix it
	}
	s.finish(r, out.kind != stepDone, out.revisionFailed)
	switch out.kind {
	case stepDone:
		return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
	case stepRetry:
		return ctrl.Result{}, out.err
	}
	return ctrl.Result{RequeueAfter: out.requeue}, nil
}
