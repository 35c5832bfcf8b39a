package application

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// reconcileHealth computes the health of the applied objects (status.health, Healthy)
// and, with spec.wait, holds Ready until they are healthy or fails with HealthCheckFailed.
func (r *Reconciler) reconcileHealth(ctx context.Context, s *syncRun) outcome {
	app := s.app
	entries := inventoryEntries(app)
	if app.Spec.Wait {
		s.markProgress(ctx, "waiting for %d objects to be healthy", len(entries))
		if err := s.manager.Wait(ctx, entries, r.timeout(app)); err != nil {
			r.recordHealth(ctx, s)
			return revisionRetry(gitsyncv1.HealthCheckFailedReason, fmt.Errorf("health check of revision %s: %w", s.revision, err))
		}
	}
	r.recordHealth(ctx, s)
	if s.health != nil && s.health.Status == gitsyncv1.HealthStatusMissing {
		// Applied, yet not there: the revision is not in the cluster (retried).
		return revisionRetry(gitsyncv1.ObjectsMissingReason,
			fmt.Errorf("revision %s was applied, but objects are missing: %s", s.revision, s.health.Message))
	}
	return done()
}

func (r *Reconciler) recordHealth(ctx context.Context, s *syncRun) {
	health, err := s.manager.HealthAfterApply(ctx, inventoryEntries(s.app))
	if err != nil {
		s.app.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusUnknown, Message: err.Error()}
		conditions.MarkUnknown(s.app, gitsyncv1.HealthyCondition, gitsyncv1.HealthStatusUnknown, "%s", err)
		return
	}
	s.health = health
	s.app.Status.Health = &gitsyncv1.HealthInfo{Status: string(health.Status), Message: health.Message}
	if health.Status == gitsyncv1.HealthStatusHealthy {
		conditions.MarkTrue(s.app, gitsyncv1.HealthyCondition, gitsyncv1.HealthStatusHealthy, "all %d objects are healthy", len(s.app.Status.Inventory.Entries))
	} else {
		conditions.MarkFalse(s.app, gitsyncv1.HealthyCondition, string(health.Status), "%s", health.Message)
	}
}
