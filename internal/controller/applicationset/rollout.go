package applicationset

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
)

// rolloutPlan is what the rollout step decided, for the status and the requeue.
type rolloutPlan struct {
	active   bool // a rollout is under way (not complete, not halted)
	complete bool
}

func (p rolloutPlan) requeue(set *gitsyncv1.ApplicationSet) time.Duration {
	if p.active {
		return min(rolloutPoll, set.GetInterval().Duration)
	}
	return set.GetInterval().Duration
}

// rollout decides which Applications may take a new revision now and says so in their
// specs: spec.rollback pins them all; with a RollingSync strategy, an Application that
// must wait gets autoSync false (a new revision then waits, the one it applied stays
// corrected), a released one the template's autoSync. Status is read fresh: the
// Applications (live) were listed through the API reader, and so are their sources.
//
// Why autoSync and not pinnedRevision holds a step: a pin may only name a revision the
// Application applied before (the pin's guard against reading another tenant's code),
// so it cannot hold a new Application (no history) nor release one to a revision it
// never applied; autoSync false holds any new revision, a first one included, keeps
// drift correction of what was applied, and the Application reports the wait itself.
func (r *Reconciler) rollout(ctx context.Context, set *gitsyncv1.ApplicationSet, apps []*gitsyncv1.Application, live []gitsyncv1.Application) (rolloutPlan, error) {
	if set.Spec.Rollback != "" {
		for _, a := range apps {
			a.Spec.PinnedRevision = set.Spec.Rollback
		}
		// Cleared, the rollback is followed by a rollout from step 1: the Applications
		// are no longer at the revision a completed rollout recorded.
		set.Status.Rollout = nil
		return rolloutPlan{complete: true}, nil
	}
	if set.Spec.Strategy == nil {
		set.Status.Rollout = nil
		return rolloutPlan{complete: true}, nil
	}
	byName := map[string]*gitsyncv1.Application{}
	for i := range live {
		byName[live[i].Name] = &live[i]
	}
	targets := map[string]string{}
	states := make([]appset.AppState, 0, len(apps))
	for _, a := range apps {
		for _, src := range a.SourceList() {
			if kind := src.SourceRef.Kind; kind != gitsyncv1.GitRepositoryKind {
				return rolloutPlan{}, fmt.Errorf("a RollingSync rollout follows GitRepository revisions: Application %s has a %s source", a.Name, kind)
			}
		}
		target, err := r.targetOf(ctx, a, targets)
		if err != nil {
			return rolloutPlan{}, err
		}
		states = append(states, stateOf(a, byName[a.Name], target))
	}
	resume := set.PendingResume()
	decision, err := appset.Decide(set.Spec.Strategy, set.Status.Rollout, states, resume != "", r.now())
	if err != nil {
		return rolloutPlan{}, err
	}
	if resume != "" {
		set.Status.LastHandledResumeAt = resume
	}
	no := false
	for _, a := range apps {
		if !decision.Release[a.Name] {
			a.Spec.AutoSync = &no
		}
	}
	for _, e := range decision.Events {
		kind := corev1.EventTypeNormal
		if e.Warning {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(set, nil, kind, e.Reason, "Rollout", "%s", e.Message)
		rolloutEvents.WithLabelValues(e.Reason).Inc()
	}
	set.Status.Rollout = &decision.Status
	rolloutStep.WithLabelValues(set.Namespace, set.Name).Set(float64(decision.Status.CurrentStep))
	if !decision.Complete && decision.Status.Halted == "" {
		conditions.MarkReconciling(set, gitsyncv1.RolloutProgressingReason, "rollout of %s at step %d", decision.Status.Revision, decision.Status.CurrentStep+1)
	}
	return rolloutPlan{active: !decision.Complete && decision.Status.Halted == "", complete: decision.Complete}, nil
}

// targetOf is the revision of the artifact of a's GitRepository, read fresh (cached per
// reconcile in seen); for spec.sources, every source's, joined as the Application's sync
// joins them.
func (r *Reconciler) targetOf(ctx context.Context, a *gitsyncv1.Application, seen map[string]string) (string, error) {
	if !a.MultiSource() {
		return r.repoRevision(ctx, a, a.Spec.SourceRef, seen)
	}
	entries := make([]string, 0, len(a.Spec.Sources))
	for _, src := range a.Spec.Sources {
		rev, err := r.repoRevision(ctx, a, src.SourceRef, seen)
		if err != nil {
			return "", err
		}
		entries = append(entries, gitsyncv1.SourceRevision(a.SourceName(src.SourceRef), rev))
	}
	return gitsyncv1.JoinRevisions(entries), nil
}

// repoRevision is the revision of the artifact of the GitRepository ref of a names.
func (r *Reconciler) repoRevision(ctx context.Context, a *gitsyncv1.Application, ref gitsyncv1.SourceReference, seen map[string]string) (string, error) {
	ns := ref.Namespace
	if ns == "" {
		ns = a.Namespace
	}
	key := ns + "/" + ref.Name
	if rev, ok := seen[key]; ok {
		return rev, nil
	}
	repo := &gitsyncv1.GitRepository{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, repo); err != nil {
		return "", fmt.Errorf("reading GitRepository %s of Application %s: %w", key, a.Name, err)
	}
	seen[key] = revisionOf(repo)
	return seen[key], nil
}

// stateOf is what the decision reads of one Application: the generated one's labels,
// the live one's status (nil: not created yet).
func stateOf(want, live *gitsyncv1.Application, target string) appset.AppState {
	s := appset.AppState{Name: want.Name, Labels: want.Labels, Target: target}
	if live == nil {
		return s
	}
	s.Exists = true
	s.Generation, s.ObservedGeneration = live.Generation, live.Status.ObservedGeneration
	s.LastAppliedRevision, s.LastAttemptedRevision = live.Status.LastAppliedRevision, live.Status.LastAttemptedRevision
	if live.Status.Sync != nil {
		s.Sync = live.Status.Sync.Status
	}
	if live.Status.Health != nil {
		s.Health = live.Status.Health.Status
	}
	if conditions.IsFalse(live, gitsyncv1.ReadyCondition) {
		s.ReadyFalseReason = conditions.GetReason(live, gitsyncv1.ReadyCondition)
	}
	return s
}
