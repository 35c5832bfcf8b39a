package applicationset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// ownedConditions are the condition types this controller writes.
var ownedConditions = []string{gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition}

// rolloutPoll is how often a rollout under way is looked at again besides the events of
// its Applications (the health timeout needs a clock).
const rolloutPoll = 10 * time.Second

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile runs the steps: finalize (on deletion), generate, roll out (or roll back),
// apply, prune; then writes status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	set := &gitsyncv1.ApplicationSet{}
	if err := r.Get(ctx, req.NamespacedName, set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(set) { // enqueued by a source or Cluster for a set of another shard
		return ctrl.Result{}, nil
	}
	if !set.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, set)
	}
	if err := r.reconcileFinalizer(ctx, set); err != nil {
		return ctrl.Result{}, err
	}
	if set.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(set, r.Client)
	defer func() {
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, set, ownedConditions, true))
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.ApplicationSetKind).Observe(r.now().Sub(start).Seconds())
	}()

	apps, err := r.generate(ctx, set)
	if err != nil {
		// Nothing is deleted when the generators fail: an unreadable source is not an
		// empty one.
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.GenerateFailedReason, "%s", err)
		conditions.Delete(set, gitsyncv1.ReconcilingCondition)
		r.Recorder.Eventf(set, nil, corev1.EventTypeWarning, gitsyncv1.GenerateFailedReason, "Generate", "%s", err)
		return ctrl.Result{RequeueAfter: retryAfter(set)}, nil
	}
	live, err := r.listGenerated(ctx, set)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := r.rollout(ctx, set, apps, live)
	if err != nil {
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.GenerateFailedReason, "%s", err)
		return ctrl.Result{RequeueAfter: retryAfter(set)}, nil
	}
	if err := r.applyAll(ctx, set, apps, live); err != nil {
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.ApplyFailedReason, "%s", err)
		return ctrl.Result{}, err
	}
	if err := r.prune(ctx, set, apps, live); err != nil {
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.PruneFailedReason, "%s", err)
		return ctrl.Result{}, err
	}
	set.Status.Applications = names(apps)
	r.summarize(set, plan, notReady(set.Status.Applications, live))
	generatedApplications.WithLabelValues(set.Namespace, set.Name).Set(float64(len(apps)))
	return ctrl.Result{RequeueAfter: plan.requeue(set)}, nil
}

// summarize sets Ready from the rollout and the Applications: False naming the
// Application that halted a rollout, Unknown while one goes on; else False while
// generated Applications are Ready=False (notReady says which), True otherwise.
func (r *Reconciler) summarize(set *gitsyncv1.ApplicationSet, plan rolloutPlan, notReady string) {
	n := len(set.Status.Applications)
	switch {
	case set.Status.Rollout != nil && set.Status.Rollout.Halted != "":
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.RolloutHaltedReason,
			"rollout of %s halted at step %d: %s; `gitsync resume appset %s` continues it",
			set.Status.Rollout.Revision, set.Status.Rollout.CurrentStep+1, set.Status.Rollout.Halted, set.Name)
		conditions.Delete(set, gitsyncv1.ReconcilingCondition)
	case set.Status.Rollout != nil && !plan.complete:
		msg := fmt.Sprintf("rollout of %s at step %d of %d", set.Status.Rollout.Revision, set.Status.Rollout.CurrentStep+1, len(set.Status.Rollout.Steps))
		conditions.MarkUnknown(set, gitsyncv1.ReadyCondition, gitsyncv1.RolloutProgressingReason, "%s", msg)
		// Reconciling is not set: status.observedGeneration says the spec was seen.
	case notReady != "":
		conditions.MarkFalse(set, gitsyncv1.ReadyCondition, gitsyncv1.ApplicationsNotReadyReason, "%s", notReady)
		conditions.Delete(set, gitsyncv1.ReconcilingCondition)
	case set.Spec.Rollback != "":
		conditions.MarkTrue(set, gitsyncv1.ReadyCondition, gitsyncv1.RolledBackReason,
			"%d Applications pinned to %s (spec.rollback)", n, set.Spec.Rollback)
		conditions.Delete(set, gitsyncv1.ReconcilingCondition)
	default:
		conditions.MarkTrue(set, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "%d Applications generated", n)
		conditions.Delete(set, gitsyncv1.ReconcilingCondition)
	}
	conditions.Delete(set, gitsyncv1.StalledCondition)
}

func retryAfter(set *gitsyncv1.ApplicationSet) time.Duration {
	return min(30*time.Second, set.GetInterval().Duration)
}

func names(apps []*gitsyncv1.Application) []string {
	out := make([]string, 0, len(apps))
	for _, a := range apps {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// reconcileFinalizer keeps a finalizer on a set with preserveOnDeletion (its deletion
// orphans the Applications first), and none otherwise (the garbage collector deletes
// them through their owner references).
func (r *Reconciler) reconcileFinalizer(ctx context.Context, set *gitsyncv1.ApplicationSet) error {
	has := controllerutil.ContainsFinalizer(set, gitsyncv1.Finalizer)
	if has == set.Spec.PreserveOnDeletion {
		return nil
	}
	base := client.MergeFrom(set.DeepCopy())
	if set.Spec.PreserveOnDeletion {
		controllerutil.AddFinalizer(set, gitsyncv1.Finalizer)
	} else {
		controllerutil.RemoveFinalizer(set, gitsyncv1.Finalizer)
	}
	if err := r.Patch(ctx, set, base); err != nil {
		return fmt.Errorf("updating the finalizer: %w", err)
	}
	return nil
}

// finalize orphans the Applications of a set with preserveOnDeletion, then lets it go.
func (r *Reconciler) finalize(ctx context.Context, set *gitsyncv1.ApplicationSet) error {
	if !controllerutil.ContainsFinalizer(set, gitsyncv1.Finalizer) {
		return nil
	}
	live, err := r.listGenerated(ctx, set)
	if err != nil {
		return err
	}
	for i := range live {
		if err := r.orphan(ctx, set, &live[i]); err != nil {
			return err
		}
	}
	base := client.MergeFrom(set.DeepCopy())
	controllerutil.RemoveFinalizer(set, gitsyncv1.Finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, set, base))
}
