package application

import (
	"context"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
	"github.com/gitsync-dev/gitsync/internal/phase"
)

// planSync sorts the render into hooks and waves and checks spec.healthChecks; the
// main set (s.objects) is what goes in the inventory and the drift watch. A wave or
// hook annotation it cannot read, or a health check that does not compile, stalls the
// revision (nothing is applied).
func (r *Reconciler) planSync(s *syncRun) error {
	plan, err := phase.New(s.objects)
	if err != nil {
		return fmt.Errorf("ordering the objects: %w", err)
	}
	if _, err := health.For(s.app); err != nil {
		return err
	}
	s.plan = plan
	s.objects = plan.Objects()
	return nil
}

// runHooks tells whether this sync runs the plan's hooks: once per revision (a
// rollback's pin is one new revision: one run), and again only on a sync request that
// asks for them (gitsync.dev/run-hooks equal to the new gitsync.dev/requested-at). A
// plain request, a resume or a spec change at the same revision runs none.
func runHooks(s *syncRun) bool {
	return s.app.Status.HooksRevision != s.revision || hooksRequested(s.app)
}

// hooksRequested tells whether a sync request not handled yet asks for the hooks.
func hooksRequested(app *gitsyncv1.Application) bool {
	requested := app.PendingRequest()
	return requested != "" && app.GetAnnotations()[gitsyncv1.RunHooksAnnotation] == requested
}

// applyPlan applies the main set: in one call when nothing orders it, otherwise through
// the phases (PreSync hooks, waves each waiting for the one before, Sync and PostSync
// hooks, SyncFail on failure). What the phases wait for shows in the Reconciling
// condition; the hooks run go in status.hooks, each with an event. A run that waits
// longer than waitInWorker yields (s.waiting, status.syncProgress: see resume.go), and
// the next reconcile of the same revision and spec resumes it.
func (r *Reconciler) applyPlan(ctx context.Context, s *syncRun, manager *apply.Manager, opts apply.Options) (*apply.Result, error) {
	if s.plan == nil || !s.plan.Ordered() {
		return manager.Apply(ctx, s.objects, opts)
	}
	app := s.app
	hooks := runHooks(s)
	var resume *phase.State
	if p := resumable(s); p != nil {
		hooks, resume = p.Hooks, resumeState(app, p)
		if s.prune == nil { // a request taken by the waiting run may say otherwise
			s.prune = p.Prune
		}
		s.carried, s.started = resume, metav1.NewTime(p.StartedAt.Time)
		if hooks {
			s.resumedHooks = app.Status.Hooks
		}
	}
	runner := &phase.Runner{
		Client:  manager.Client(),
		Applier: manager,
		Judge:   manager.Judge(),
		HookLabels: map[string]string{
			gitsyncv1.HookApplicationLabel:          app.Name,
			gitsyncv1.HookApplicationNamespaceLabel: app.Namespace,
		},
		Timeout: r.timeout(app),
		Yield:   r.waitInWorker(),
		Now:     r.now,
		Progress: func(ctx context.Context, msg string) {
			conditions.MarkReconciling(app, gitsyncv1.ProgressingReason, "%s", msg)
			conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, gitsyncv1.ProgressingReason, "%s", msg)
			s.saveProgress(ctx)
		},
	}
	// Without the drift lock held since the run yielded (a restart), someone may have
	// written the waves applied before: they are applied again.
	reapply := resume != nil && r.Desired != nil && !s.lock.held
	out, err := runner.Run(ctx, s.plan, phase.Options{Hooks: hooks, Apply: opts, Resume: resume, Reapply: reapply})
	if out.Waiting != nil {
		r.saveWaiting(s, hooks, out.Waiting)
		return out.Result, nil
	}
	app.Status.SyncProgress = nil
	if hooks {
		r.recordHooks(s, out.Hooks)
		if err == nil {
			app.Status.HooksRevision = s.revision
		}
	}
	if err != nil && len(out.Hooks) > 0 && out.Phase != "dry-run" && isHookPhase(out.Phase) {
		return out.Result, &hookError{err: err}
	}
	return out.Result, err
}

func isHookPhase(p string) bool {
	return p == gitsyncv1.HookPreSync || p == gitsyncv1.HookSync || p == gitsyncv1.HookPostSync
}

// hookError is a failed hook: the revision fails with reason HookFailed.
type hookError struct{ err error }

func (e *hookError) Error() string { return e.err.Error() }
func (e *hookError) Unwrap() error { return e.err }

// recordHooks puts the hooks of the run in status.hooks and emits an event for each
// that finished in this reconcile (a resumed run's earlier hooks had theirs, and keep
// their finishedAt; a running hook has neither yet).
func (r *Reconciler) recordHooks(s *syncRun, runs []phase.HookRun) {
	now := metav1.NewTime(r.now())
	hooks := make([]gitsyncv1.HookStatus, 0, len(runs))
	for i, h := range runs {
		st := gitsyncv1.HookStatus{
			Kind: h.Kind, Namespace: h.Namespace, Name: h.Name, Phase: h.Phase,
			Result: h.Result, Message: h.Message, Revision: s.revision,
		}
		switch {
		case h.Result == phase.HookRunning:
		case i < len(s.resumedHooks) && s.resumedHooks[i].Result == h.Result && s.resumedHooks[i].Name == h.Name &&
			s.resumedHooks[i].Phase == h.Phase:
			st.FinishedAt = s.resumedHooks[i].FinishedAt
		default:
			st.FinishedAt = &now
			r.hookEvent(s, h)
		}
		hooks = append(hooks, st)
	}
	if len(hooks) == 0 {
		hooks = nil
	}
	s.app.Status.Hooks = hooks
}

// pruneInWaveOrder prunes the stale objects in reverse wave order (the wave read from
// each live object's annotations: a stale object is no longer in Git).
func pruneInWaveOrder(ctx context.Context, manager *apply.Manager, stale []apply.Entry, opts apply.PruneOptions) ([]apply.Change, error) {
	waves := make([]int, len(stale))
	for i, e := range stale {
		gvk, err := e.GroupVersionKind()
		if err != nil {
			continue
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		key, _ := e.ObjMetadata()
		err = manager.Client().Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, m)
		switch {
		case err == nil:
			u := &unstructured.Unstructured{}
			u.SetAnnotations(m.GetAnnotations())
			waves[i] = phase.WaveOf(u)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("pruning %s: %w", e.Subject(), err)
		}
	}
	var pruned []apply.Change
	for _, group := range reverseWaves(stale, waves) {
		changes, err := manager.Prune(ctx, group, opts)
		pruned = append(pruned, changes...)
		if err != nil {
			return pruned, err
		}
	}
	return pruned, nil
}

// reverseWaves groups entries by wave (waves[i] is the wave of entries[i]), highest
// wave first.
func reverseWaves(entries []apply.Entry, waves []int) [][]apply.Entry {
	byWave := map[int][]apply.Entry{}
	var numbers []int
	for i, e := range entries {
		if _, ok := byWave[waves[i]]; !ok {
			numbers = append(numbers, waves[i])
		}
		byWave[waves[i]] = append(byWave[waves[i]], e)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(numbers)))
	out := make([][]apply.Entry, 0, len(numbers))
	for _, n := range numbers {
		out = append(out, byWave[n])
	}
	return out
}
