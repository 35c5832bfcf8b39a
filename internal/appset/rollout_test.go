package appset

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

const (
	oldRev = "main@sha1:1111111111111111111111111111111111111111"
	newRev = "main@sha1:2222222222222222222222222222222222222222"
)

// sixApps are two per step (step=1..3), all Synced and Healthy at oldRev.
func sixApps() []AppState {
	var out []AppState
	for _, n := range []string{"a1", "a2", "b1", "b2", "c1", "c2"} {
		out = append(out, AppState{Name: n, Labels: map[string]string{"step": string(rune('1' + n[0] - 'a'))}, Target: newRev, Exists: true,
			Generation: 2, ObservedGeneration: 2, LastAppliedRevision: oldRev, LastAttemptedRevision: oldRev,
			Sync: gitsyncv1.SyncStatusSynced, Health: gitsyncv1.HealthStatusHealthy})
	}
	return out
}

func threeSteps() *gitsyncv1.ApplicationSetStrategy {
	s := &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, HealthTimeout: &metav1.Duration{Duration: time.Minute}}
	for _, v := range []string{"1", "2", "3"} {
		s.Steps = append(s.Steps, gitsyncv1.RollingSyncStep{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": v}}})
	}
	return s
}

func releasedNames(d Decision) string {
	var out []string
	for _, n := range []string{"a1", "a2", "b1", "b2", "c1", "c2", "x1"} {
		if d.Release[n] {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// finish marks the named Applications Synced and Healthy at newRev, one generation on.
func finish(apps []AppState, names ...string) {
	for i := range apps {
		for _, n := range names {
			if apps[i].Name == n {
				apps[i].LastAppliedRevision, apps[i].LastAttemptedRevision = newRev, newRev
			}
		}
	}
}

func decide(t *testing.T, s *gitsyncv1.ApplicationSetStrategy, prev *gitsyncv1.RolloutStatus, apps []AppState, resumed bool, now time.Time) Decision {
	t.Helper()
	d, err := Decide(s, prev, apps, resumed, now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRolloutStepsAdvanceOnlyOnNewRevisionHealth(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	s, apps := threeSteps(), sixApps()
	d := decide(t, s, nil, apps, false, now)
	if releasedNames(d) != "a1,a2" || d.Status.CurrentStep != 0 || d.Status.Revision != newRev {
		t.Fatalf("first decision: released %s, step %d, revision %s", releasedNames(d), d.Status.CurrentStep, d.Status.Revision)
	}
	// Healthy and Synced at the OLD revision (the stale status Argo CD's #29410 advances on):
	// the step stays.
	d = decide(t, s, &d.Status, apps, false, now.Add(time.Second))
	if d.Status.CurrentStep != 0 || releasedNames(d) != "a1,a2" {
		t.Fatalf("old-revision health advanced the rollout: step %d, released %s", d.Status.CurrentStep, releasedNames(d))
	}
	// Applied the new revision, but the status is of an older generation: still no.
	finish(apps, "a1", "a2")
	apps[0].Generation = 3
	d = decide(t, s, &d.Status, apps, false, now.Add(2*time.Second))
	if d.Status.CurrentStep != 0 {
		t.Fatal("a status older than the Application's generation advanced the rollout")
	}
	apps[0].ObservedGeneration = 3
	d = decide(t, s, &d.Status, apps, false, now.Add(3*time.Second))
	if d.Status.CurrentStep != 1 || releasedNames(d) != "b1,b2" {
		t.Fatalf("step 1 done: step %d, released %s", d.Status.CurrentStep, releasedNames(d))
	}
	if d.Status.Steps[0].State != gitsyncv1.StepCompleted || d.Status.Steps[1].State != gitsyncv1.StepProgressing || d.Status.Steps[2].State != gitsyncv1.StepPending {
		t.Fatalf("steps = %+v", d.Status.Steps)
	}
	if !hasEvent(d, StepCompletedReason) || !hasEvent(d, StepStartedReason) {
		t.Fatalf("events = %+v", d.Events)
	}
	finish(apps, "b1", "b2", "c1", "c2")
	d = decide(t, s, &d.Status, apps, false, now.Add(4*time.Second))
	if !d.Complete || d.Status.CurrentStep != 3 || releasedNames(d) != "" || !hasEvent(d, RolloutCompletedReason) {
		t.Fatalf("complete = %v, step %d, released %s, events %+v", d.Complete, d.Status.CurrentStep, releasedNames(d), d.Events)
	}
	again := decide(t, s, &d.Status, apps, false, now.Add(5*time.Second))
	if hasEvent(again, RolloutCompletedReason) {
		t.Fatal("a completed rollout announced itself twice")
	}
}

func TestRolloutHaltsOnFailureNamingTheApplication(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	s, apps := threeSteps(), sixApps()
	finish(apps, "a1", "a2")
	d := decide(t, s, nil, apps, false, now)
	if d.Status.CurrentStep != 1 {
		t.Fatalf("step %d, want 1", d.Status.CurrentStep)
	}
	// b2 Degraded at an old revision: not this rollout's failure.
	apps[3].Health = gitsyncv1.HealthStatusDegraded
	d = decide(t, s, &d.Status, apps, false, now.Add(time.Second))
	if d.Status.Halted != "" {
		t.Fatalf("an old revision's Degraded halted the rollout: %s", d.Status.Halted)
	}
	finish(apps, "b1", "b2") // b2 applied the new revision and is Degraded there
	d = decide(t, s, &d.Status, apps, false, now.Add(2*time.Second))
	if !strings.Contains(d.Status.Halted, "Application b2") || d.Status.Steps[1].State != gitsyncv1.StepHalted || !hasEvent(d, gitsyncv1.RolloutHaltedReason) {
		t.Fatalf("halted = %q, steps %+v", d.Status.Halted, d.Status.Steps)
	}
	if d.Release["c1"] || d.Release["c2"] || d.Status.CurrentStep != 1 {
		t.Fatal("step 3 started after step 2 halted")
	}
	// b2 recovers by itself: a halt stays until resumed.
	apps[3].Health = gitsyncv1.HealthStatusHealthy
	d = decide(t, s, &d.Status, apps, false, now.Add(3*time.Second))
	if d.Status.Halted == "" || d.Status.CurrentStep != 1 {
		t.Fatal("a halted rollout went on without a resume")
	}
	d = decide(t, s, &d.Status, apps, true, now.Add(4*time.Second))
	if d.Status.Halted != "" || d.Status.CurrentStep != 2 || releasedNames(d) != "c1,c2" || !hasEvent(d, RolloutResumedReason) {
		t.Fatalf("resumed: halted %q, step %d, released %s", d.Status.Halted, d.Status.CurrentStep, releasedNames(d))
	}
}

func TestRolloutHealthTimeout(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	s, apps := threeSteps(), sixApps()
	finish(apps, "a1", "a2", "b1")
	apps[3].LastAppliedRevision = newRev
	apps[3].Health = gitsyncv1.HealthStatusProgressing
	d := decide(t, s, nil, apps, false, now)
	d = decide(t, s, &d.Status, apps, false, now.Add(30*time.Second))
	if d.Status.Halted != "" {
		t.Fatal("halted before the timeout")
	}
	d = decide(t, s, &d.Status, apps, false, now.Add(2*time.Minute))
	if !strings.Contains(d.Status.Halted, "Application b2") || !strings.Contains(d.Status.Halted, "health timeout") {
		t.Fatalf("halted = %q", d.Status.Halted)
	}
}

func TestRolloutMaxUpdateAndUnmatched(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	half := intstr.FromString("50%")
	s := &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, Steps: []gitsyncv1.RollingSyncStep{
		{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "step", Operator: metav1.LabelSelectorOpIn, Values: []string{"1", "2"}}}}, MaxUpdate: &half},
	}}
	apps := sixApps()
	apps = append(apps, AppState{Name: "x1", Target: newRev}) // not created yet, matches no step
	d := decide(t, s, nil, apps, false, now)
	if releasedNames(d) != "a1,a2" || len(d.Status.Steps) != 2 {
		t.Fatalf("50%% of 4: released %s, %d steps (the unmatched form a last one)", releasedNames(d), len(d.Status.Steps))
	}
	finish(apps, "a1")
	d = decide(t, s, &d.Status, apps, false, now.Add(time.Second))
	if releasedNames(d) != "a2,b1" {
		t.Fatalf("a finished Application frees its room: released %s", releasedNames(d))
	}
	finish(apps, "a2", "b1", "b2")
	d = decide(t, s, &d.Status, apps, false, now.Add(2*time.Second))
	if d.Status.CurrentStep != 1 || releasedNames(d) != "c1,c2,x1" {
		t.Fatalf("step %d, released %s", d.Status.CurrentStep, releasedNames(d))
	}
	// A new revision starts over at step 1.
	for i := range apps {
		apps[i].Target = "main@sha1:3333333333333333333333333333333333333333"
	}
	d = decide(t, s, &d.Status, apps, false, now.Add(3*time.Second))
	if d.Status.CurrentStep != 0 || releasedNames(d) != "a1,a2" {
		t.Fatalf("new revision: step %d, released %s", d.Status.CurrentStep, releasedNames(d))
	}
}

func hasEvent(d Decision, reason string) bool {
	for _, e := range d.Events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
