package ui

import (
	"html/template"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// failure is why an Application is failing: Ready=False or Stalled=True, with the
// condition's reason and message (Stalled's first: it says more). ok is false for an
// Application that is ready, or whose sync is still in progress.
func failure(conds []metav1.Condition) (reason, message string, stalled, ok bool) {
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason, c.Message, true, true
	}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason, c.Message, false, true
	}
	return "", "", false, false
}

// setState fills the row's failing state: a failing Application shows Failed (or
// Stalled) with its reason, and its health and last result are marked as stale, so that
// no green badge stands beside a failure. A selective sync's Ready=False
// (PartiallySynced) and a revision waiting for a sync request (AwaitingSync) are no
// failure: the state says so.
func (r *AppRow) setState(a *gitsyncv1.Application) {
	reason, msg, stalled, failing := failure(a.Status.Conditions)
	r.Pinned = a.Spec.PinnedRevision
	switch {
	case failing && !stalled && (reason == gitsyncv1.PartiallySyncedReason || reason == gitsyncv1.AwaitingSyncReason):
		// A selective sync succeeded, or a newer revision waits for a sync request
		// (autoSync false): not a failure, the revision waits.
		r.State, r.Reason, r.Message = reason, reason, msg
	case failing && stalled:
		r.State, r.Failing, r.Reason, r.Message = "Stalled", true, reason, msg
	case failing:
		r.State, r.Failing, r.Reason, r.Message = "Failed", true, reason, msg
	case r.Ready == "True":
		r.State = "Ready"
	default:
		r.State = "Progressing"
	}
}

// when is a time as the pages show it: the absolute UTC time, which the page's script
// turns into a relative one ("5 min ago") and keeps as the hover title.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return ""
	}
	abs := template.HTMLEscapeString(formatTime(t))
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + abs + `">` + abs + `</time>`)
}

// whenText is when of a time the views keep as text (formatTime's layout).
func whenText(s string) template.HTML {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return when(t)
}
