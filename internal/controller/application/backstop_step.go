package application

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// reconcileBackstop ends a routine resync early: when the revision, the spec and the
// last result are unchanged, no sync was requested and the drift watches hold this
// Application's objects, the resync only compares the watch cache with what the drift
// checks last saw (no API request) and hands any difference to the drift controller.
// Health is read again only while it is not Healthy. A prune that a sibling held back
// makes the next resync a full one (prune_step.go).
func (r *Reconciler) reconcileBackstop(ctx context.Context, s *syncRun) outcome {
	app := s.app
	key := client.ObjectKeyFromObject(app)
	quiet := !r.refsChanged.take(key) && !r.heldPrunes.take(key) && r.Desired != nil && r.Desired.Tracked(key) && settled(app, s.revision) && !s.values.changed(app)
	if !quiet {
		return done()
	}
	r.Desired.Backstop(key)
	if app.Status.Health != nil && app.Status.Health.Status != gitsyncv1.HealthStatusHealthy {
		manager, err := r.Applier(app)
		if err != nil {
			return retry(err)
		}
		s.manager = manager
		r.recordHealth(ctx, s)
	}
	return waitFor(r.requeueAfter(s), "", "")
}
