package appset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// AppState is what the rollout decision reads of one generated Application: its labels,
// the revision it should reach, and its status as read fresh from the API server.
type AppState struct {
	Name   string
	Labels map[string]string
	// Target is the revision the Application should reach (its source's artifact).
	Target string
	// Exists is false for an Application not created yet.
	Exists                                     bool
	Generation, ObservedGeneration             int64
	LastAppliedRevision, LastAttemptedRevision string
	Sync, Health                               string
	// ReadyFalseReason is the Ready condition's reason when it is False.
	ReadyFalseReason string
}

// Reached tells whether the Application applied its target revision.
func (a AppState) Reached() bool { return a.Exists && a.LastAppliedRevision == a.Target }

// Done tells whether the Application is Synced and Healthy at its target revision and
// at its current generation: the only state that lets a rollout go on. An Application
// that is Healthy at an older revision, or whose status predates its spec, is not.
func (a AppState) Done() bool {
	return a.Reached() && a.ObservedGeneration == a.Generation &&
		a.Sync == gitsyncv1.SyncStatusSynced && a.Health == gitsyncv1.HealthStatusHealthy
}

// failureReasons are the Ready=False reasons that say a sync of the revision failed.
var failureReasons = map[string]bool{
	gitsyncv1.BuildFailedReason: true, gitsyncv1.ApplyFailedReason: true, gitsyncv1.PruneFailedReason: true,
	gitsyncv1.HealthCheckFailedReason: true, gitsyncv1.RenderLimitExceededReason: true, gitsyncv1.AccessDeniedReason: true,
}

// Failed says why the Application failed at its target revision ("" when it did not):
// Degraded, or Ready=False with a failure reason, observed at its current generation.
func (a AppState) Failed() string {
	if !a.Exists || a.ObservedGeneration != a.Generation {
		return ""
	}
	if a.LastAttemptedRevision != a.Target && a.LastAppliedRevision != a.Target {
		return "" // an older revision's failure is not this rollout's
	}
	if a.Health == gitsyncv1.HealthStatusDegraded {
		return "health Degraded"
	}
	if failureReasons[a.ReadyFalseReason] {
		return "Ready=False " + a.ReadyFalseReason
	}
	return ""
}

// Event is something the rollout did that people are told of.
type Event struct {
	Reason, Message string
	Warning         bool
}

// Step events' reasons.
const (
	StepStartedReason      = "RolloutStepStarted"
	StepCompletedReason    = "RolloutStepCompleted"
	RolloutCompletedReason = "RolloutCompleted"
	RolloutResumedReason   = "RolloutResumed"
)

// Decision is what a rollout allows now.
type Decision struct {
	// Release names the Applications that may take their target revision now (autoSync
	// as the template says); the others are held (autoSync false).
	Release map[string]bool
	Status  gitsyncv1.RolloutStatus
	Events  []Event
	// Complete is true when every step is Completed.
	Complete bool
}

// Decide runs one RollingSync decision: apps are assigned to the first step whose
// selector matches them (those no step matches form a last step); a step starts when the
// one before is Completed (all its Applications Done); at most maxUpdate of the current
// step's unfinished Applications are released at once; a Failed Application, or a step
// not Completed within healthTimeout, halts the rollout until resumed.
func Decide(strategy *gitsyncv1.ApplicationSetStrategy, prev *gitsyncv1.RolloutStatus, apps []AppState, resumed bool, now time.Time) (Decision, error) {
	groups, err := assign(strategy.Steps, apps)
	if err != nil {
		return Decision{}, err
	}
	timeout := 10 * time.Minute
	if strategy.HealthTimeout != nil && strategy.HealthTimeout.Duration > 0 {
		timeout = strategy.HealthTimeout.Duration
	}
	d := Decision{Release: map[string]bool{}}
	st := gitsyncv1.RolloutStatus{}
	rev := revisionOf(apps)
	ts := metav1.NewTime(now)
	if prev != nil && prev.Revision == rev {
		st.CurrentStep, st.Halted, st.StepStartedAt = prev.CurrentStep, prev.Halted, prev.StepStartedAt
	} else {
		st.Revision, st.StepStartedAt = rev, &ts
		if len(groups) > 0 {
			d.event(false, StepStartedReason, "revision %s: step 1 of %d started", rev, len(groups))
		}
	}
	st.Revision = rev
	if int(st.CurrentStep) > len(groups) {
		st.CurrentStep = int32(len(groups))
	}
	if resumed && st.Halted != "" {
		d.event(false, RolloutResumedReason, "revision %s: step %d resumed (was halted: %s)", rev, st.CurrentStep+1, st.Halted)
		st.Halted, st.StepStartedAt = "", &ts
	}
	wasComplete := prev != nil && prev.Revision == rev && int(prev.CurrentStep) >= len(groups)
	for st.Halted == "" && int(st.CurrentStep) < len(groups) {
		g := groups[st.CurrentStep]
		if why := halt(g, st.StepStartedAt, timeout, now); why != "" {
			st.Halted = why
			d.event(true, gitsyncv1.RolloutHaltedReason, "revision %s: step %d halted: %s", rev, st.CurrentStep+1, why)
			break
		}
		if !allDone(g) {
			break
		}
		st.CurrentStep++
		st.StepStartedAt = &ts
		d.event(false, StepCompletedReason, "revision %s: step %d of %d completed", rev, st.CurrentStep, len(groups))
		if int(st.CurrentStep) < len(groups) {
			d.event(false, StepStartedReason, "revision %s: step %d of %d started", rev, st.CurrentStep+1, len(groups))
		}
	}
	d.Complete = int(st.CurrentStep) >= len(groups)
	if d.Complete && !wasComplete && len(groups) > 0 {
		d.event(false, RolloutCompletedReason, "revision %s: all %d steps completed", rev, len(groups))
	}
	for i, g := range groups {
		step := gitsyncv1.RolloutStep{State: gitsyncv1.StepPending}
		var window map[string]bool
		switch {
		case i < int(st.CurrentStep):
			step.State = gitsyncv1.StepCompleted
			window = map[string]bool{}
			for _, a := range g.apps {
				window[a.Name] = true // behind the front: whatever is new here goes at once
			}
		case i == int(st.CurrentStep) && st.Halted != "":
			step.State = gitsyncv1.StepHalted
		case i == int(st.CurrentStep):
			step.State = gitsyncv1.StepProgressing
			window = released(g)
		}
		for _, a := range g.apps {
			state := gitsyncv1.RolloutAppWaiting
			switch {
			case a.Done():
				state = gitsyncv1.RolloutAppDone
			case a.Failed() != "":
				state = gitsyncv1.RolloutAppFailed
			case window[a.Name]:
				state = gitsyncv1.RolloutAppUpdating
			}
			if window[a.Name] && !a.Reached() {
				d.Release[a.Name] = true
			}
			step.Applications = append(step.Applications, gitsyncv1.RolloutApplication{Name: a.Name, Status: state})
		}
		st.Steps = append(st.Steps, step)
	}
	d.Status = st
	return d, nil
}

func (d *Decision) event(warning bool, reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Reason: reason, Message: fmt.Sprintf(format, args...), Warning: warning})
}

type group struct {
	apps      []AppState
	maxUpdate *intstr.IntOrString
}

// assign puts each Application in the first step whose selector matches its labels;
// those no step matches form a last step.
func assign(steps []gitsyncv1.RollingSyncStep, apps []AppState) ([]group, error) {
	sels := make([]labels.Selector, len(steps))
	for i := range steps {
		s, err := metav1.LabelSelectorAsSelector(&steps[i].Selector)
		if err != nil {
			return nil, fmt.Errorf("strategy.steps[%d].selector: %w", i, err)
		}
		sels[i] = s
	}
	groups := make([]group, len(steps)+1)
	for i := range steps {
		groups[i].maxUpdate = steps[i].MaxUpdate
	}
	sorted := append([]AppState(nil), apps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, a := range sorted {
		i := len(steps)
		for j, s := range sels {
			if s.Matches(labels.Set(a.Labels)) {
				i = j
				break
			}
		}
		groups[i].apps = append(groups[i].apps, a)
	}
	if len(groups[len(steps)].apps) == 0 {
		groups = groups[:len(steps)]
	}
	return groups, nil
}

// released is the window of the current step: its first maxUpdate unfinished
// Applications by name (finished ones take no room).
func released(g group) map[string]bool {
	n := len(g.apps)
	if g.maxUpdate != nil {
		v, err := intstr.GetScaledValueFromIntOrPercent(g.maxUpdate, len(g.apps), true)
		if err == nil && v < n {
			n = max(v, 1)
		}
	}
	out := map[string]bool{}
	for _, a := range g.apps {
		if len(out) >= n {
			break
		}
		if !a.Done() {
			out[a.Name] = true
		}
	}
	return out
}

func allDone(g group) bool {
	for _, a := range g.apps {
		if !a.Done() {
			return false
		}
	}
	return true
}

// halt says why the step halts: an Application failed at the new revision, or the step
// ran past the timeout without all its Applications Done. "" when it goes on.
func halt(g group, started *metav1.Time, timeout time.Duration, now time.Time) string {
	for _, a := range g.apps {
		if why := a.Failed(); why != "" {
			return fmt.Sprintf("Application %s failed at %s: %s", a.Name, a.Target, why)
		}
	}
	if started == nil || now.Sub(started.Time) <= timeout {
		return ""
	}
	for _, a := range g.apps {
		if !a.Done() {
			return fmt.Sprintf("Application %s was not Synced and Healthy at %s within the health timeout %s (sync %s, health %s, applied %s)",
				a.Name, a.Target, timeout, orNone(a.Sync), orNone(a.Health), orNone(a.LastAppliedRevision))
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// revisionOf is the revision being rolled out: the Applications' target, or their
// targets joined when their sources differ.
func revisionOf(apps []AppState) string {
	seen := map[string]bool{}
	var revs []string
	for _, a := range apps {
		if a.Target != "" && !seen[a.Target] {
			seen[a.Target] = true
			revs = append(revs, a.Target)
		}
	}
	sort.Strings(revs)
	return strings.Join(revs, ",")
}
