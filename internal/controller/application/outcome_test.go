package application

import (
	"errors"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// finishOutcome is the one place a step's outcome becomes conditions and a result:
// Stalled only for what retrying cannot fix, the error back to the queue for a retry, a
// Warning event and a Failed history entry for a failed revision.
func TestFinishOutcome(t *testing.T) {
	const rev = "main@sha1:0123456789012345678901234567890123456789"
	for _, tc := range []struct {
		name                  string
		out                   func(r *Reconciler, s *syncRun) outcome
		ready, stalled        metav1.ConditionStatus // "" for absent
		reason                string
		requeue               time.Duration
		err, event, inHistory bool
	}{
		{name: "waiting for a dependency", out: func(r *Reconciler, s *syncRun) outcome {
			return waitFor(time.Second, gitsyncv1.DependencyNotReadyReason, "dependency ns/db is not ready")
		}, ready: metav1.ConditionFalse, reason: gitsyncv1.DependencyNotReadyReason, requeue: time.Second},
		{name: "waiting, conditions kept", out: func(r *Reconciler, s *syncRun) outcome { return waitFor(time.Minute, "", "") },
			ready: metav1.ConditionTrue, reason: gitsyncv1.SucceededReason, requeue: time.Minute},
		{name: "a broken render", out: func(r *Reconciler, s *syncRun) outcome {
			return r.revisionStalled(s, gitsyncv1.BuildFailedReason, "building ./app: broken.yaml")
		}, ready: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reason: gitsyncv1.BuildFailedReason, requeue: 10 * time.Minute, event: true, inHistory: true},
		{name: "an apply that may pass", out: func(r *Reconciler, s *syncRun) outcome {
			return revisionRetry(gitsyncv1.ApplyFailedReason, errors.New("applying: timeout"))
		}, ready: metav1.ConditionFalse, reason: gitsyncv1.ApplyFailedReason, err: true, event: true, inHistory: true},
		{name: "an error of the reconcile", out: func(r *Reconciler, s *syncRun) outcome { return retry(errors.New("reading: timeout")) },
			ready: metav1.ConditionTrue, reason: gitsyncv1.SucceededReason, err: true},
		{name: "a denied reference", out: func(r *Reconciler, s *syncRun) outcome {
			return stalled(gitsyncv1.AccessDeniedReason, "sourceRef names another namespace")
		}, ready: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reason: gitsyncv1.AccessDeniedReason},
		{name: "a chart that is not in the index", out: func(r *Reconciler, s *syncRun) outcome {
			return r.revisionStalled(s, gitsyncv1.ChartNotFoundReason, "no chart web")
		}, ready: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reason: gitsyncv1.ChartNotFoundReason, requeue: 10 * time.Minute, event: true, inHistory: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
			conditions.MarkTrue(app, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "applied revision %s", rev)
			recorder := events.NewFakeRecorder(10)
			r := &Reconciler{Recorder: recorder}
			s := &syncRun{app: app, revision: rev, log: logr.Discard(), attempted: true}
			res, err := s.finishOutcome(r, tc.out(r, s))

			g.Expect(err != nil).To(Equal(tc.err))
			g.Expect(res.RequeueAfter).To(Equal(tc.requeue))
			ready := conditions.Get(app, gitsyncv1.ReadyCondition)
			g.Expect([]string{string(ready.Status), ready.Reason}).To(Equal([]string{string(tc.ready), tc.reason}))
			if tc.stalled == "" {
				g.Expect(conditions.Has(app, gitsyncv1.StalledCondition)).To(BeFalse())
			} else {
				g.Expect(conditions.Get(app, gitsyncv1.StalledCondition).Status).To(Equal(tc.stalled))
			}
			g.Expect(len(recorder.Events)).To(Equal(map[bool]int{true: 1, false: 0}[tc.event]))
			g.Expect(len(app.Status.History)).To(Equal(map[bool]int{true: 1, false: 0}[tc.inHistory]))
		})
	}
}
