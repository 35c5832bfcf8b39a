package v1beta1

import (
	"testing"
	"time"
)

// A sync request is pending until handled, with its hooks and prune options; a
// reconcile request of a source sets only requested-at.
func TestRequestSync(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 5, time.FixedZone("x", 3600))
	app := &Application{Spec: ApplicationSpec{Prune: true}}
	off := false
	requested := app.RequestSync(now, true, &off)
	if requested != "2026-11-29T02:00:00.000000005Z" {
		t.Fatalf("requested = %q, want the time in UTC, RFC 3339 with nanoseconds", requested)
	}
	if app.PendingRequest() != requested || app.Annotations[RunHooksAnnotation] != requested || app.Prunes() {
		t.Fatalf("annotations = %v: want a pending request that runs hooks and does not prune", app.Annotations)
	}
	app.Status.LastHandledReconcileAt = requested
	if app.PendingRequest() != "" || !app.Prunes() {
		t.Fatalf("handled: pending %q, prunes %v; want no request and spec.prune again", app.PendingRequest(), app.Prunes())
	}
	// A plain request leaves hooks and prune as they were asked before (not again).
	later := app.RequestSync(now.Add(time.Second), false, nil)
	if app.Annotations[RunHooksAnnotation] == later || app.RequestedPrune() != nil {
		t.Fatalf("annotations = %v: a plain request asks for neither hooks nor a prune override", app.Annotations)
	}

	repo := &GitRepository{}
	if got := RequestReconcile(repo, now); repo.Annotations[RequestedAtAnnotation] != got || len(repo.Annotations) != 1 {
		t.Fatalf("annotations = %v, want only requested-at", repo.Annotations)
	}
}
