package phase

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
)

// Applier is what a Run needs of apply.Manager.
type Applier interface {
	DryRun(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) error
	Apply(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) (*apply.Result, error)
}

// Runner executes a Plan for one Application.
type Runner struct {
	// Client creates, reads and deletes hooks and reads health, with the Application's
	// identity (the same client as the Applier's).
	Client  client.Client
	Applier Applier
	// Judge judges the health of waves and hooks (the Application's, health.For; nil
	// judges by kstatus alone). A wave wait does not read the kinds it finds healthy
	// as soon as applied (no status to wait for).
	Judge *health.Judge
	// HookLabels go on every hook the run creates (they are not the owner labels).
	HookLabels map[string]string
	// Timeout bounds the run's waits (hooks to finish, waves to be healthy) together:
	// they end Timeout after the run began (State.Started, for a resumed run).
	Timeout time.Duration
	// Yield, when set, bounds how long one call waits for a hook or a wave: a wait that
	// starts in the call may take Yield (the common quick hook or wave finishes within
	// it), a wait carried over from the call that yielded is looked at once; then Run
	// returns an Outcome whose Waiting holds the State to resume from (Options.Resume),
	// instead of holding its caller. Zero: Run waits until the run ends.
	Yield time.Duration
	// Progress, when set, is told what the run waits for ("PreSync: waiting for Job/x").
	Progress func(ctx context.Context, msg string)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Options of one run.
type Options struct {
	// Hooks runs the hooks (a new revision, or a requested sync); without it only
	// the waves are applied, in order.
	Hooks bool
	Apply apply.Options
	// Resume continues the run of the same plan and Options.Hooks that yielded with
	// this State: the dry-run and the hooks created already are not done again, nor
	// (without Reapply) the applies of the waves applied already.
	Resume *State
	// Reapply applies again, on resume, the waves applied before the yield (when
	// something else may have written them meanwhile).
	Reapply bool
}

// Outcome is what a run did, also when it failed.
type Outcome struct {
	// Result holds the changes of every wave applied (nil when nothing was applied).
	Result *apply.Result
	// Hooks are the hooks run, in order.
	Hooks []HookRun
	// Phase is where the run stopped with an error ("PreSync", "wave 2", ...).
	Phase string
	// Waiting, when set, is where the run stands: it waits for a hook or a wave beyond
	// Runner.Yield. Run it again with Options.Resume = Waiting to go on.
	Waiting *State
}

// HookRun is the outcome of one hook.
type HookRun struct {
	Kind, Namespace, Name, Phase string
	// Result: Running, Succeeded or Failed.
	Result  string
	Message string
	// Deleted tells whether the hook was deleted after it finished (its delete policy).
	Deleted bool
}

// Hook results.
const (
	HookRunning   = "Running"
	HookSucceeded = "Succeeded"
	HookFailed    = "Failed"
)

// Run dry-runs the whole main set (and the hooks), then runs PreSync hooks, the waves
// in order (each once the previous is healthy, Sync hooks with the wave of its
// weight), and PostSync hooks once everything is healthy. When a phase fails, SyncFail
// hooks run and the error names what failed; nothing past the failure is applied.
// With Runner.Yield, a run that waits longer returns with Outcome.Waiting and no error.
func (r *Runner) Run(ctx context.Context, plan *Plan, opts Options) (*Outcome, error) {
	x := r.newRun(plan, opts)
	out := x.out
	if opts.Resume == nil {
		if err := r.Applier.DryRun(ctx, plan.Objects(), opts.Apply); err != nil {
			out.Phase = "dry-run"
			return out, err
		}
		if opts.Hooks {
			if err := r.dryRunHooks(ctx, plan.Hooks(), definedBy(plan)); err != nil {
				out.Phase = "dry-run"
				return out, err
			}
		}
	}
	var err error
	if st := opts.Resume; st != nil && st.Failure != "" {
		// The run failed before it yielded: its SyncFail hooks are under way.
		err = x.resumeFailure(st)
	} else {
		err = x.run(ctx)
		if errors.Is(err, errWaiting) {
			return x.yield(), nil
		}
		if err != nil {
			x.failure, x.failedAt = err, r.now()
		}
	}
	if err != nil && opts.Hooks && len(plan.SyncFail) > 0 {
		ferr := x.runHooks(ctx, gitsyncv1.HookSyncFail, plan.SyncFail)
		if errors.Is(ferr, errWaiting) {
			return x.yield(), nil
		}
		if ferr != nil {
			err = fmt.Errorf("%w; then %v", err, ferr)
		}
	}
	return out, err
}

func (x *run) run(ctx context.Context) error {
	r, plan, opts, out := x.r, x.plan, x.opts, x.out
	if opts.Hooks && len(plan.PreSync) > 0 {
		// CRDs and Namespaces stay first: a PreSync hook may live in a Namespace, or be
		// of a kind, that this revision creates. (A resumed run applied them already.)
		if defs := clusterDefinitions(plan); len(defs) > 0 && opts.Resume == nil {
			res, err := r.Applier.Apply(ctx, defs, opts.Apply)
			if res != nil {
				out.Result = merge(out.Result, res)
			}
			if err != nil {
				out.Phase = "definitions"
				return err
			}
		}
		if err := x.runHooks(ctx, gitsyncv1.HookPreSync, plan.PreSync); err != nil {
			out.Phase = gitsyncv1.HookPreSync
			return err
		}
	}
	var syncHooks []Hook
	if opts.Hooks {
		syncHooks = plan.Sync
	}
	steps := steps(plan.Waves, syncHooks)
	for i, st := range steps {
		label := fmt.Sprintf("wave %d", st.number)
		if len(st.objects) > 0 {
			if err := x.applyStep(ctx, i, st); err != nil {
				out.Phase = label
				return err
			}
		}
		if len(st.hooks) > 0 {
			if err := x.runHooks(ctx, gitsyncv1.HookSync, st.hooks); err != nil {
				out.Phase = gitsyncv1.HookSync
				return err
			}
		}
		// The next wave waits for this one's health; the last one too when PostSync
		// hooks follow. A resumed run looks again only at the wave it waited for.
		last := i == len(steps)-1
		if len(st.objects) > 0 && (!last || (opts.Hooks && len(plan.PostSync) > 0)) && i >= x.resumedAt-1 {
			if err := x.waitHealthy(ctx, label, st.objects, i == x.resumedAt-1); err != nil {
				out.Phase = label
				return err
			}
		}
	}
	if opts.Hooks && len(plan.PostSync) > 0 {
		if err := x.runHooks(ctx, gitsyncv1.HookPostSync, plan.PostSync); err != nil {
			out.Phase = gitsyncv1.HookPostSync
			return err
		}
	}
	return nil
}

// applyStep applies the objects of step i, unless a resumed run applied them before it
// yielded (and Reapply is not asked): they count as unchanged then.
func (x *run) applyStep(ctx context.Context, i int, st step) error {
	if i < x.resumedAt && !x.opts.Reapply {
		x.out.Result = merge(x.out.Result, unchangedResult(st.objects))
		return nil
	}
	res, err := x.r.Applier.Apply(ctx, st.objects, x.opts.Apply)
	if res != nil {
		x.out.Result = merge(x.out.Result, res)
		x.created += res.Count(apply.CreatedAction)
		x.configured += res.Count(apply.ConfiguredAction)
	}
	if err == nil && i >= x.applied {
		x.applied = i + 1
	}
	return err
}

// step is one wave with the Sync hooks of its weight.
type step struct {
	number  int
	objects []*unstructured.Unstructured
	hooks   []Hook
}

// steps merges the waves and the Sync hooks by number: a Sync hook of weight N runs
// right after wave N is applied (or at its place when there is no wave N).
func steps(waves []Wave, hooks []Hook) []step {
	byNumber := map[int]*step{}
	for _, w := range waves {
		byNumber[w.Number] = &step{number: w.Number, objects: w.Objects}
	}
	for _, h := range hooks {
		st := byNumber[h.Weight]
		if st == nil {
			st = &step{number: h.Weight}
			byNumber[h.Weight] = st
		}
		st.hooks = append(st.hooks, h)
	}
	out := make([]step, 0, len(byNumber))
	for _, st := range byNumber {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	if len(waves) > 0 && len(out) > 0 && out[0].number != waves[0].Number {
		// Cluster definitions (in the first wave) come before any hook.
		for i := range out {
			if out[i].number == waves[0].Number {
				first := out[i]
				copy(out[1:i+1], out[:i])
				out[0] = first
				break
			}
		}
	}
	return out
}

// merge adds b's changes and inventory to a's; an object applied twice (the cluster
// definitions, before PreSync and again in their wave) counts once, with its first change.
func merge(a, b *apply.Result) *apply.Result {
	if a == nil {
		return b
	}
	out := &apply.Result{Changes: append([]apply.Change{}, a.Changes...), Inventory: append([]apply.Entry{}, a.Inventory...)}
	seen := map[string]bool{}
	for _, e := range a.Inventory {
		seen[e.ID] = true
	}
	for _, e := range b.Inventory {
		if !seen[e.ID] {
			out.Inventory = append(out.Inventory, e)
			seen[e.ID] = true
		}
	}
	changed := map[string]bool{}
	for _, c := range a.Changes {
		changed[c.Subject] = true
	}
	for _, c := range b.Changes {
		if !changed[c.Subject] {
			out.Changes = append(out.Changes, c)
		}
	}
	return out
}

// clusterDefinitions are the plan's CRDs and Namespaces (the head of its first wave).
func clusterDefinitions(plan *Plan) []*unstructured.Unstructured {
	var defs []*unstructured.Unstructured
	if len(plan.Waves) > 0 {
		for _, o := range plan.Waves[0].Objects {
			if IsDefinition(o) {
				defs = append(defs, o)
			}
		}
	}
	return defs
}

// definitions is what a plan defines for the objects after it: Namespaces by name, and
// whether it holds CRDs.
type definitions struct {
	namespaces map[string]bool
	crds       bool
}

func definedBy(plan *Plan) definitions {
	d := definitions{namespaces: map[string]bool{}}
	for _, o := range plan.Objects() {
		switch o.GroupVersionKind().GroupKind().String() {
		case "Namespace":
			d.namespaces[o.GetName()] = true
		case "CustomResourceDefinition.apiextensions.k8s.io":
			d.crds = true
		}
	}
	return d
}
