package application

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/syncwindow"
)

// reconcileWindow holds a new revision back while spec.syncWindows are closed (outside
// every allow window, or inside a deny window): Ready=False/SyncWindowClosed, sync
// OutOfSync at the held revision, status.syncWindow says until when, a look again then,
// and an event (routed by Alerts) when a window first holds a revision. A sync request
// goes through only where the windows that close the Application have manualSync;
// otherwise it is refused (Ready=False/SyncWindowClosed, a Warning event). A resync of
// the applied revision, and a sync that waits for a hook or a wave, go on: drift stays
// reported and corrected as selfHeal says, unless a window that closes the Application
// says selfHeal: false (status.syncWindow.selfHeal false; the drift controller reports
// only); when the windows let corrections through again, the drift controller checks the
// objects once more. A window that does not parse holds every sync (Stalled,
// SyncWindowInvalid).
func (r *Reconciler) reconcileWindow(_ context.Context, s *syncRun) outcome {
	app := s.app
	if len(app.Spec.SyncWindows) == 0 {
		app.Status.SyncWindow = nil
		return done()
	}
	set, err := syncwindow.Parse(app.Spec.SyncWindows)
	if err != nil {
		app.Status.SyncWindow = nil
		return stalled(gitsyncv1.SyncWindowInvalidReason, err.Error())
	}
	now := r.now()
	d := set.At(now)
	held := app.Status.SyncWindow
	status := &gitsyncv1.SyncWindowStatus{State: gitsyncv1.SyncWindowOpen, ManualSync: d.ManualSync}
	if !d.Until.IsZero() {
		status.Until = &metav1.Time{Time: d.Until}
	}
	app.Status.SyncWindow = status
	if !d.SelfHeal {
		status.SelfHeal = ptr.To(false)
	} else if held != nil && held.SelfHeal != nil && r.Desired != nil {
		// Corrections were held: the drift reported meanwhile is corrected now.
		r.Desired.CheckAll(client.ObjectKeyFromObject(app))
	}
	if d.Open {
		return done()
	}
	status.State = gitsyncv1.SyncWindowClosed
	until := "further notice"
	if status.Until != nil {
		until = status.Until.UTC().Format(time.RFC3339)
	}
	requested := app.PendingRequest()
	switch {
	case requested != "" && d.ManualSync:
		s.log.Info("sync window closed; a requested sync goes through (manualSync)", "requestedAt", requested, "until", until)
		return done()
	case requested != "":
		msg := fmt.Sprintf("sync requested at %s refused: %s (none with manualSync) close the Application until %s", requested, strings.Join(d.By, "; "), until)
		if conditions.GetMessage(app, gitsyncv1.ReadyCondition) != msg {
			r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.SyncWindowClosedReason, "Sync", "%s", msg)
		}
		return r.windowWait(s, now, d.Until, msg)
	case (s.revision == app.Status.LastAppliedRevision && !s.values.changed(app)) || resumable(s) != nil:
		return done()
	}
	status.HeldRevision = s.revision
	app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision}
	msg := fmt.Sprintf("revision %s waits until %s: %s", s.revision, until, strings.Join(d.By, "; "))
	if held == nil || held.HeldRevision != s.revision {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, gitsyncv1.SyncWindowClosedReason, "Sync", "%s", msg)
		s.log.Info("sync window holds a revision", "revision", s.revision, "until", until)
	}
	return r.windowWait(s, now, d.Until, msg)
}

// windowWait stops the steps with Ready=False/SyncWindowClosed and looks again when the
// window changes, or at the interval if that comes first.
func (r *Reconciler) windowWait(s *syncRun, now, until time.Time, msg string) outcome {
	requeue := r.requeueAfter(s)
	if !until.IsZero() {
		// A second past the end: the cron times are whole seconds, and Next is exclusive.
		requeue = min(requeue, until.Sub(now)+time.Second)
	}
	return waitFor(max(requeue, time.Second), gitsyncv1.SyncWindowClosedReason, msg)
}
