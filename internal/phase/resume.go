package phase

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// State is where a run stands when it yields (Outcome.Waiting): enough to go on with
// the same plan without creating a hook again or waiting longer than the run's timeout.
type State struct {
	// Started is when the run began: its waits end at Started + Runner.Timeout.
	Started time.Time
	// Applied counts the steps (waves with the Sync hooks of their weight) whose
	// objects were applied; the run waits for the last of them (or for its hooks).
	Applied int
	// Hooks are the hooks created so far, in the order they ran: the finished ones with
	// their result, the ones awaited as HookRunning. A resumed run matches them to the
	// plan's hooks by phase and order (the plan of one revision and spec is the same).
	Hooks []HookRun
	// Created and Configured count what the applies before the yield changed (a resumed
	// run reports the waves it does not apply again as unchanged).
	Created, Configured int
	// Failure, when set, is why the run failed: its SyncFail hooks are under way, until
	// FailedAt + Runner.Timeout. FailedPhase is Outcome.Phase of the failure.
	Failure, FailedPhase string
	FailedAt             time.Time
}

// Running returns the hooks the run waits for (none when it waits for a wave).
func (s *State) Running() []HookRun {
	var out []HookRun
	for _, h := range s.Hooks {
		if h.Result == HookRunning {
			out = append(out, h)
		}
	}
	return out
}

// errWaiting is returned by a wait that yields (Runner.Yield): it unwinds the run.
var errWaiting = errors.New("waiting")

// run is one call of Runner.Run: the plan, where it started (a resumed State) and what
// it did so far.
type run struct {
	r    *Runner
	plan *Plan
	opts Options
	out  *Outcome

	started time.Time
	// resumedAt is State.Applied of the resumed run (0 for a new one).
	resumedAt int
	// applied counts the steps applied, as State.Applied.
	applied             int
	created, configured int
	// recorded holds the resumed run's hooks by phase, and next the ones matched so far.
	recorded map[string][]HookRun
	next     map[string]int
	// yieldAt is when a wait that starts in this call yields (zero until one starts).
	yieldAt time.Time
	// failure is the run's error once a phase failed (SyncFail hooks follow).
	failure  error
	failedAt time.Time
}

func (r *Runner) newRun(plan *Plan, opts Options) *run {
	x := &run{r: r, plan: plan, opts: opts, out: &Outcome{}, started: r.now(),
		recorded: map[string][]HookRun{}, next: map[string]int{}}
	if st := opts.Resume; st != nil {
		x.started = st.Started
		x.resumedAt, x.applied = st.Applied, st.Applied
		x.created, x.configured = st.Created, st.Configured
		for _, h := range st.Hooks {
			x.recorded[h.Phase] = append(x.recorded[h.Phase], h)
		}
	}
	return x
}

// resumeFailure takes up a run that failed before it yielded: the hooks of the phases
// before SyncFail are reported as they were, and the failure stands.
func (x *run) resumeFailure(st *State) error {
	for _, h := range st.Hooks {
		if h.Phase != gitsyncv1.HookSyncFail {
			x.out.Hooks = append(x.out.Hooks, h)
		}
	}
	x.out.Phase = st.FailedPhase
	x.failure, x.failedAt = errors.New(st.Failure), st.FailedAt
	return x.failure
}

// recordedHook returns the resumed run's next hook of phase (nil when the run had not
// created it): the hooks of a phase are created in the plan's order.
func (x *run) recordedHook(phase string) *HookRun {
	i := x.next[phase]
	if i >= len(x.recorded[phase]) {
		return nil
	}
	x.next[phase] = i + 1
	h := x.recorded[phase][i]
	return &h
}

// yield returns the Outcome of a run that waits: what it did so far, and Waiting.
func (x *run) yield() *Outcome {
	st := &State{Started: x.started, Applied: x.applied, Hooks: append([]HookRun(nil), x.out.Hooks...),
		Created: x.created, Configured: x.configured}
	if x.failure != nil {
		st.Failure, st.FailedPhase, st.FailedAt = x.failure.Error(), x.out.Phase, x.failedAt
	}
	x.out.Waiting = st
	return x.out
}

// deadline is when the run's current waits time out: Timeout after the run began, or
// after it failed for SyncFail hooks.
func (x *run) deadline() time.Time {
	if x.failure != nil {
		return x.failedAt.Add(x.r.timeout())
	}
	return x.started.Add(x.r.timeout())
}

// unchangedResult reports objs as applied and unchanged (a resumed run's waves that
// the run applied before it yielded).
func unchangedResult(objs []*unstructured.Unstructured) *apply.Result {
	res := &apply.Result{}
	for _, o := range objs {
		e := apply.EntryOf(o)
		res.Changes = append(res.Changes, apply.Change{Entry: e, Subject: apply.Subject(o), Action: apply.UnchangedAction})
		res.Inventory = append(res.Inventory, e)
	}
	return res
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
