package phase

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// Applier is what a Run needs of apply.Manager.
type Applier interface {
	DryRun(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) error
	Apply(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) (*apply.Result, error)
}

// Health judges one object as read from the cluster: Healthy, Progressing, Degraded
// (the HealthStatus constants of api/v1alpha1) and a message.
type Health func(obj *unstructured.Unstructured) (status, message string)

// Runner executes a Plan for one Application.
type Runner struct {
	// Client creates, reads and deletes hooks and reads health, with the Application's
	// identity (the same client as the Applier's).
	Client  client.Client
	Applier Applier
	Health  Health
	// HealthyOnceApplied, when set, names kinds that are healthy as soon as applied
	// (no status to wait for): a wave wait does not read them.
	HealthyOnceApplied func(schema.GroupVersionKind) bool
	// HookLabels go on every hook the run creates (they are not the owner labels).
	HookLabels map[string]string
	// Timeout bounds each wait: a hook to finish, a wave to be healthy.
	Timeout time.Duration
	// Progress, when set, is told what the run waits for ("PreSync: waiting for Job/x").
	Progress func(ctx context.Context, msg string)
}

// Options of one run.
type Options struct {
	// Hooks runs the hooks (a new revision, or a requested sync); without it only
	// the waves are applied, in order.
	Hooks bool
	Apply apply.Options
}

// Outcome is what a run did, also when it failed.
type Outcome struct {
	// Result holds the changes of every wave applied (nil when nothing was applied).
	Result *apply.Result
	// Hooks are the hooks run, in order.
	Hooks []HookRun
	// Phase is where the run stopped with an error ("PreSync", "wave 2", ...).
	Phase string
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
// in order (each once the previous is healthy, Sync hooks with the wave of their
// weight), and PostSync hooks once everything is healthy. When a phase fails, SyncFail
// hooks run and the error names what failed; nothing past the failure is applied.
func (r *Runner) Run(ctx context.Context, plan *Plan, opts Options) (*Outcome, error) {
	out := &Outcome{}
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
	err := r.run(ctx, plan, opts, out)
	if err != nil && opts.Hooks && len(plan.SyncFail) > 0 {
		if ferr := r.runHooks(ctx, gitsyncv1.HookSyncFail, plan.SyncFail, out); ferr != nil {
			err = fmt.Errorf("%w; then %v", err, ferr)
		}
	}
	return out, err
}

func (r *Runner) run(ctx context.Context, plan *Plan, opts Options, out *Outcome) error {
	if opts.Hooks && len(plan.PreSync) > 0 {
		// CRDs and Namespaces stay first: a PreSync hook may live in a Namespace, or be
		// of a kind, that this revision creates.
		if defs := clusterDefinitions(plan); len(defs) > 0 {
			res, err := r.Applier.Apply(ctx, defs, opts.Apply)
			if res != nil {
				out.Result = merge(out.Result, res)
			}
			if err != nil {
				out.Phase = "definitions"
				return err
			}
		}
		if err := r.runHooks(ctx, gitsyncv1.HookPreSync, plan.PreSync, out); err != nil {
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
		if len(st.objects) > 0 {
			res, err := r.Applier.Apply(ctx, st.objects, opts.Apply)
			if res != nil {
				out.Result = merge(out.Result, res)
			}
			if err != nil {
				out.Phase = fmt.Sprintf("wave %d", st.number)
				return err
			}
		}
		if len(st.hooks) > 0 {
			if err := r.runHooks(ctx, gitsyncv1.HookSync, st.hooks, out); err != nil {
				out.Phase = gitsyncv1.HookSync
				return err
			}
		}
		// The next wave waits for this one's health; the last one too when PostSync
		// hooks follow.
		last := i == len(steps)-1
		if len(st.objects) > 0 && (!last || (opts.Hooks && len(plan.PostSync) > 0)) {
			label := fmt.Sprintf("wave %d", st.number)
			if err := r.waitHealthy(ctx, label, st.objects); err != nil {
				out.Phase = label
				return err
			}
		}
	}
	if opts.Hooks && len(plan.PostSync) > 0 {
		if err := r.runHooks(ctx, gitsyncv1.HookPostSync, plan.PostSync, out); err != nil {
			out.Phase = gitsyncv1.HookPostSync
			return err
		}
	}
	return nil
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

func (r *Runner) progress(ctx context.Context, format string, args ...any) {
	if r.Progress != nil {
		r.Progress(ctx, fmt.Sprintf(format, args...))
	}
}

// waitHealthy waits until every object is Healthy; a Degraded object fails at once.
func (r *Runner) waitHealthy(ctx context.Context, label string, objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	var pending []*unstructured.Unstructured
	for _, o := range objs {
		if r.HealthyOnceApplied == nil || !r.HealthyOnceApplied(o.GroupVersionKind()) {
			pending = append(pending, o)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	var lastMsg string
	for delay := firstPoll; ; delay = nextPoll(delay) {
		var still []*unstructured.Unstructured
		for _, o := range pending {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				if ctx.Err() != nil {
					break
				}
				still = append(still, o)
				lastMsg = fmt.Sprintf("%s: %v", apply.Subject(o), err)
				continue
			}
			status, msg := r.Health(live)
			switch status {
			case gitsyncv1.HealthStatusHealthy:
			case gitsyncv1.HealthStatusDegraded:
				return fmt.Errorf("%s: %s is degraded: %s", label, apply.Subject(o), msg)
			default:
				still = append(still, o)
				lastMsg = fmt.Sprintf("%s (%s: %s)", apply.Subject(o), status, msg)
			}
		}
		if len(still) == 0 {
			return nil
		}
		if len(still) != len(pending) || delay == firstPoll {
			r.progress(ctx, "%s: waiting for %s", label, waitingFor(still, lastMsg))
		}
		pending = still
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: timed out after %s waiting for %s", label, r.timeout(), lastMsg)
		case <-time.After(delay):
		}
	}
}

// waitingFor names what a wait is for: the last object seen not ready, with its message.
func waitingFor(objs []*unstructured.Unstructured, last string) string {
	s := last
	if len(objs) > 1 {
		s += fmt.Sprintf(" and %d more", len(objs)-1)
	}
	return s
}

// Polls start fast (a wave or hook often finishes at once) and slow down to once a second.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = time.Second
)

func nextPoll(d time.Duration) time.Duration {
	if d *= 2; d > maxPoll {
		return maxPoll
	}
	return d
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 5 * time.Minute
}
