package application

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// reconcilePrune deletes what left Git (only objects still carrying this Application's
// labels), when spec.prune is set or the sync request being handled asks for it
// (gitsync.dev/sync-prune, which can also turn it off for that sync). What the render describes stays in the inventory
// whether it was applied or not (a chart's CRDs that crds: Create leaves alone once they
// exist, or crds: Skip): a policy does not remove an object from Git. A CRD that still
// has custom resources is not deleted without spec.pruneCRDs (Ready=False/PruneRefused),
// and a Namespace holding objects gitsync does not manage is orphaned with a Warning.
// An object a sibling Application that cannot be rendered holds back (it might render
// it) stays, in the inventory too, so that the first sync after the sibling renders
// again prunes it: a Warning at each sync meanwhile, Ready=False/PruneSkipped naming the
// sibling, and the next resync is a full one (heldPrunes), not a quiet backstop.
// Sets Ready=False/PruneFailed on other failures.
func (r *Reconciler) reconcilePrune(ctx context.Context, s *syncRun) outcome {
	app := s.app
	previous := s.previous
	current := union(s.result.Inventory, stillDescribed(previous, s))
	if app.Spec.Prune && !s.prunes() {
		// A sync request turned pruning off this once: what left Git stays in the
		// inventory, for the next sync to prune (OutOfSync, Ready=False/PruneSkipped).
		s.pruneSkipped = apply.Stale(previous, current)
		current = union(current, s.pruneSkipped)
	}
	if s.prunes() {
		stale := apply.Stale(previous, current)
		if len(stale) > 0 {
			skips := &pruneSkips{}
			pruned, err := pruneInWaveOrder(ctx, s.manager, stale, r.pruneOptions(app, skips))
			orphaned := r.recordOrphans(s, pruned)
			if _, held := skips.split(stale); len(held) > 0 {
				// Fail closed, but not silently: the objects stay, and say why.
				s.pruneHeld, s.pruneHeldBy = held, skips.siblings(held)
				r.heldPrunes.mark(client.ObjectKeyFromObject(app))
				r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.PruneSkippedReason, "Prune",
					"left Git but not pruned while %s (it might render them)\n%s",
					s.pruneHeldBy, changeSummary(nil, markChanges(held, heldAction)))
			}
			if err != nil {
				// What was applied is recorded; the stale objects (but the orphaned) stay
				// in the inventory so the next attempt prunes them.
				setInventory(app, append(append([]apply.Entry{}, current...), without(stale, orphaned)...))
				var refused *apply.RefusedError
				if errors.As(err, &refused) {
					return r.revisionStalled(s, gitsyncv1.PruneRefusedReason, fmt.Sprintf("revision %s applied; pruning: %v", s.revision, err))
				}
				return revisionRetry(gitsyncv1.PruneFailedReason, fmt.Errorf("pruning: %w", err))
			}
		}
	}
	// Held back: still this Application's, for the next sync to prune.
	setInventory(app, union(current, s.pruneHeld))
	return done()
}

// stillDescribed returns the entries of the last inventory that the render describes
// but the apply did not report (a policy left them out of it).
func stillDescribed(previous []apply.Entry, s *syncRun) []apply.Entry {
	described := make(map[string]bool, len(s.objects)+len(s.chartCRDs.CRDs))
	for _, o := range s.objects {
		described[apply.EntryOf(o).ID] = true
	}
	for id := range s.chartCRDs.CRDs {
		described[id] = true
	}
	var out []apply.Entry
	for _, e := range previous {
		if described[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// recordOrphans keeps the deletions in s.pruned and emits a Warning for each object the
// prune orphaned on purpose; it returns the orphaned objects' IDs.
func (r *Reconciler) recordOrphans(s *syncRun, changes []apply.Change) map[string]bool {
	orphaned := map[string]bool{}
	for _, c := range changes {
		if c.Action != apply.OrphanedAction {
			s.pruned = append(s.pruned, c)
			continue
		}
		orphaned[c.ID] = true
		r.Recorder.Eventf(s.app, nil, corev1.EventTypeWarning, gitsyncv1.OrphanedReason, "Prune",
			"%s left Git but was not deleted: %s; it is no longer managed", c.Subject, c.Message)
	}
	return orphaned
}

// without returns entries whose IDs are not in ids.
func without(entries []apply.Entry, ids map[string]bool) []apply.Entry {
	var out []apply.Entry
	for _, e := range entries {
		if !ids[e.ID] {
			out = append(out, e)
		}
	}
	return out
}
