package application

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// finish records the sync the steps made (finishOutcome set the conditions of a step
// that stopped them): Ready, sync status, history and events. failed is true when the
// step that stopped them failed the revision.
func (s *syncRun) finish(r *Reconciler, stopped, failed bool) {
	app := s.app
	if !failed && (stopped || s.result == nil) {
		return // stopped before the end without a failed revision: nothing was synced
	}
	changed := s.result != nil && (s.result.Count(apply.CreatedAction)+s.result.Count(apply.ConfiguredAction)+len(s.pruned) > 0)
	if failed {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision, Chart: s.chart, ChartVersion: s.chartVersion}
	} else {
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: s.revision, Chart: s.chart, ChartVersion: s.chartVersion}
		app.Status.LastAppliedRevision = s.revision
		app.Status.ValuesRevisions = s.values.revisions
		// Every object was just applied from Git: nothing is drifted any more.
		app.Status.Drift = nil
		conditions.Delete(app, gitsyncv1.ReconcilingCondition)
		conditions.Delete(app, gitsyncv1.StalledCondition)
		if kept := s.pruneSkipped; len(kept) > 0 {
			// The cluster holds more than the revision's render: not Synced.
			app.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
			conditions.MarkFalse(app, gitsyncv1.ReadyCondition, gitsyncv1.PruneSkippedReason,
				"applied revision %s; %d object(s) that left Git were not pruned (the sync request turned prune off), e.g. %s",
				s.revision, len(kept), kept[0].Subject())
		} else if held := s.pruneHeld; len(held) > 0 {
			app.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
			conditions.MarkFalse(app, gitsyncv1.ReadyCondition, gitsyncv1.PruneSkippedReason,
				"applied revision %s; %d object(s) that left Git were not pruned while %s (it might render them), e.g. %s",
				s.revision, len(held), s.pruneHeldBy, held[0].Subject())
		} else {
			kit.MarkApplied(app, s.revision)
		}
	}
	newRevision := len(app.Status.History) == 0 || app.Status.History[0].Revision != s.revision
	if !failed && (changed || newRevision) {
		s.log.Info("synced", "revision", s.revision, "created", s.count(apply.CreatedAction), "configured", s.count(apply.ConfiguredAction),
			"unchanged", s.count(apply.UnchangedAction), "pruned", len(s.pruned), "duration", r.now().Sub(s.started.Time).Round(time.Millisecond).String())
	}
	if changed {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Applied", "Sync", "revision %s\n%s", s.revision, changeSummary(s.result.Changes, s.pruned))
		for _, c := range s.result.Changes {
			if c.Action != apply.UnchangedAction {
				kit.ApplyChangesTotal.WithLabelValues(string(c.Action)).Inc()
			}
		}
		kit.ApplyChangesTotal.WithLabelValues(string(apply.DeletedAction)).Add(float64(len(s.pruned)))
	}
	// History records syncs that did something or failed, and each new revision; a
	// no-change resync writes nothing.
	if s.attempted && (changed || failed || newRevision) {
		entry := gitsyncv1.SyncHistoryEntry{Revision: s.revision, StartedAt: s.started, Result: gitsyncv1.SyncResultSucceeded,
			Chart: s.chart, ChartVersion: s.chartVersion, Signer: s.signer, ValuesRevisions: s.values.revisions,
			Attestation: s.attestation}
		finished := metav1.NewTime(r.now())
		entry.FinishedAt = &finished
		if failed {
			entry.Result = gitsyncv1.SyncResultFailed
			entry.Message = conditions.GetMessage(app, gitsyncv1.ReadyCondition)
		}
		if s.result != nil {
			entry.Created, entry.Configured, entry.Unchanged = s.count(apply.CreatedAction), s.count(apply.ConfiguredAction), s.count(apply.UnchangedAction)
		}
		entry.Pruned = len(s.pruned)
		if !failed {
			entry.Message = s.historySummary()
		}
		kit.SyncsTotal.WithLabelValues(entry.Result).Inc()
		if failed && !newRevision && app.Status.History[0].Result == gitsyncv1.SyncResultFailed {
			// The same revision failed again (a retry): one row, updated in place, that
			// keeps when the first attempt started.
			entry.StartedAt = app.Status.History[0].StartedAt
			app.Status.History[0] = entry
			return
		}
		app.Status.History = append([]gitsyncv1.SyncHistoryEntry{entry}, app.Status.History...)
		if len(app.Status.History) > maxHistory {
			app.Status.History = app.Status.History[:maxHistory]
		}
	}
}

// maxHistoryMessage bounds the summary of a successful sync in its history entry.
const maxHistoryMessage = 200

// historySummary says in one short line what a successful sync changed: the objects
// created, configured and pruned (the first few), or that nothing changed, and the
// objects a no-prune sync kept.
func (s *syncRun) historySummary() string {
	var changes []apply.Change
	if s.result != nil {
		changes = s.result.Changes
	}
	var parts []string
	for _, c := range append(append([]apply.Change{}, changes...), s.pruned...) {
		if c.Action != apply.UnchangedAction {
			parts = append(parts, c.Subject+" "+string(c.Action))
		}
	}
	sort.Strings(parts)
	msg := "no changes"
	if len(parts) > 0 {
		msg = parts[0]
		for i, p := range parts[1:] {
			if len(msg)+2+len(p) > maxHistoryMessage {
				msg += fmt.Sprintf(" … and %d more", len(parts)-1-i)
				break
			}
			msg += ", " + p
		}
	}
	if n := len(s.pruneSkipped); n > 0 {
		msg += fmt.Sprintf("; %d left Git but not pruned (prune off for this sync)", n)
	}
	if n := len(s.pruneHeld); n > 0 {
		msg += fmt.Sprintf("; %d left Git but not pruned (held back by a sibling that cannot be rendered)", n)
	}
	return msg
}

const maxHistory = 10

// count is how many objects the sync's applies left with action ("created",
// "configured", "unchanged"): with a resumed run, those of the reconciles before (which
// this one reports unchanged) count as they were then.
func (s *syncRun) count(action apply.Action) int {
	n := s.result.Count(action)
	if c := s.carried; c != nil {
		switch action {
		case apply.CreatedAction:
			n += c.Created
		case apply.ConfiguredAction:
			n += c.Configured
		case apply.UnchangedAction:
			n = max(n-c.Created-c.Configured, 0)
		}
	}
	return n
}

func (r *Reconciler) requeueAfter(s *syncRun) time.Duration {
	d, _ := r.Caps.Interval("spec.interval", s.app.GetInterval().Duration)
	// Until everything is healthy, look again soon (there is no watch on health yet).
	if s.health != nil && s.health.Status != gitsyncv1.HealthStatusHealthy && d > 15*time.Second {
		d = 15 * time.Second
	}
	if r.Jitter != nil {
		d += r.Jitter(d)
	}
	return d
}

func (r *Reconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return 5 * time.Second
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func autoSync(app *gitsyncv1.Application) bool {
	return app.Spec.AutoSync == nil || *app.Spec.AutoSync
}

func pathOf(app *gitsyncv1.Application) string {
	if app.Spec.Path == "" {
		return "./"
	}
	return app.Spec.Path
}

func inventoryEntries(app *gitsyncv1.Application) []apply.Entry {
	return apply.EntriesOf(app.Status.Inventory)
}

func setInventory(app *gitsyncv1.Application, entries []apply.Entry) {
	app.Status.Inventory = apply.InventoryOf(entries)
}

// union returns a followed by the entries of b not in a.
func union(a, b []apply.Entry) []apply.Entry {
	seen := make(map[string]bool, len(a))
	out := append([]apply.Entry{}, a...)
	for _, e := range a {
		seen[e.ID] = true
	}
	for _, e := range b {
		if !seen[e.ID] {
			out = append(out, e)
			seen[e.ID] = true
		}
	}
	return out
}

// maxSummary bounds changeSummary, so that an event's note (1,024 bytes at most, or the
// API server rejects the event) has room for its first line.
const maxSummary = 900

// changeSummary lists what changed, one "Subject action" per line, for events. A list
// longer than maxSummary becomes counts per action, the first subjects and "… and N more".
func changeSummary(changes, pruned []apply.Change) string {
	var lines []string
	counts := map[apply.Action]int{}
	for _, c := range append(append([]apply.Change{}, changes...), pruned...) {
		if c.Action != apply.UnchangedAction {
			lines = append(lines, c.Subject+" "+string(c.Action))
			counts[c.Action]++
		}
	}
	sort.Strings(lines)
	if all := strings.Join(lines, "\n"); len(all) <= maxSummary {
		return all
	}
	actions := make([]apply.Action, 0, len(counts))
	for a := range counts {
		actions = append(actions, a)
	}
	slices.Sort(actions)
	parts := make([]string, 0, len(actions))
	for _, a := range actions {
		parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
	}
	out := strings.Join(parts, ", ") + ":"
	for i, line := range lines {
		more := fmt.Sprintf("\n… and %d more", len(lines)-i)
		if len(line) > 200 {
			line = line[:200] + "…"
		}
		if len(out)+1+len(line)+len(fmt.Sprintf("\n… and %d more", len(lines)-i-1)) > maxSummary {
			return out + more
		}
		out += "\n" + line
	}
	return out
}
