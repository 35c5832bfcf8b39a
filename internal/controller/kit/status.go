// Package kit is the controllers' small shared runtime: the status patcher, the priority
// queue, predicates, backoff and jitter, metrics, and the Application↔source index.
package kit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// statusObject is a gitsync kind whose conditions the patch helper manages.
type statusObject interface {
	client.Object
	conditions.Setter
}

// statusPatcher is what PatchStatus writes through: NewStatusPatcher's, or fluxcd's
// patch.SerialPatcher (which writes conditions and the rest of status apart).
type statusPatcher interface {
	Patch(ctx context.Context, obj client.Object, opts ...patch.Option) error
}

// PatchStatus writes what a reconcile changed in status (nothing when nothing changed).
// owned are the condition types this controller owns. Only a finished reconcile (not
// Reconciling) records the generation it observed, as kstatus expects.
func PatchStatus(ctx context.Context, patcher statusPatcher, obj statusObject, owned []string, final bool) error {
	opts := []patch.Option{
		patch.WithOwnedConditions{Conditions: owned},
		patch.WithFieldOwner(gitsyncv1.FieldManager),
	}
	if final && !conditions.IsReconciling(obj) {
		opts = append(opts, patch.WithStatusObservedGeneration{})
	}
	if err := patcher.Patch(ctx, obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// progressDelay is how long a step runs before the progress it announced is written
// (see mergePatcher.PatchSoon): a sync or a fetch that ends sooner writes status once.
const progressDelay = 2 * time.Second

// NewStatusPatcher returns a statusPatcher that writes all of a status change, conditions
// included, in one merge patch of the status subresource (fluxcd's helper sends the
// conditions and the rest of status in two), and metadata and spec changes in another.
// It suits kinds whose conditions only their own controller writes: the conditions list
// is sent whole when it changed.
func NewStatusPatcher(obj client.Object, c client.Client) *mergePatcher {
	return &mergePatcher{client: c, before: obj.DeepCopyObject().(client.Object), delay: progressDelay}
}

type mergePatcher struct {
	client client.Client
	delay  time.Duration

	mu     sync.Mutex
	before client.Object
	// pending is the progress write that PatchSoon armed; the next Patch supersedes it.
	pending *pendingPatch
}

type pendingPatch struct {
	obj   client.Object
	timer *time.Timer
}

// PatchSoon writes the status that obj has now (a copy) once the patcher's delay has
// passed, unless Patch comes first: progress ("applying revision X") is shown for the
// steps that take long enough to be seen, and a step that ends sooner costs no write.
// A PatchSoon while one is pending replaces what that one writes. Only status is
// written, as gitsync's field manager. A failed write is only logged: the next Patch
// writes status anyway.
func (p *mergePatcher) PatchSoon(ctx context.Context, obj client.Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	snapshot := obj.DeepCopyObject().(client.Object)
	if p.pending != nil {
		p.pending.obj = snapshot
		return
	}
	// The write may come after the step that armed it returned (a phase's wait has its
	// own context): it keeps the context's values, not its deadline.
	ctx = context.WithoutCancel(ctx)
	pending := &pendingPatch{obj: snapshot}
	pending.timer = time.AfterFunc(p.delay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.pending != pending {
			return // superseded
		}
		p.pending = nil
		if err := p.writePending(ctx, pending); err != nil && !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Info("writing progress", "error", err.Error())
		}
	})
	p.pending = pending
}

// writePending writes the status of a pending PatchSoon and makes it the status of
// before, whose metadata and spec stay those the reconcile started from: the next
// Patch then sends what changed in status since the progress, and in metadata and spec
// only what the reconcile itself changed (never the server's newer resourceVersion or
// someone else's edit, read back). The caller holds p.mu.
func (p *mergePatcher) writePending(ctx context.Context, pending *pendingPatch) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sent, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pending.obj)
	if err != nil {
		return err
	}
	// pending.obj is PatchSoon's own copy: the server's answer may land in it.
	if err := p.client.Status().Patch(ctx, pending.obj, client.MergeFrom(p.before),
		client.FieldOwner(gitsyncv1.FieldManager)); err != nil {
		return err
	}
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.before)
	if err != nil {
		return err
	}
	before["status"] = sent["status"]
	next := p.before.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(before, next); err != nil {
		return err
	}
	p.before = next
	return nil
}

// Patch implements statusPatcher; of opts, it honours the field owner and
// WithStatusObservedGeneration. It cancels a pending PatchSoon.
func (p *mergePatcher) Patch(ctx context.Context, obj client.Object, opts ...patch.Option) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		p.pending.timer.Stop()
		p.pending = nil
	}
	return p.patch(ctx, obj, opts...)
}

// patch writes what changed in obj since before; the caller holds p.mu.
func (p *mergePatcher) patch(ctx context.Context, obj client.Object, opts ...patch.Option) error {
	o := &patch.HelperOptions{}
	for _, opt := range opts {
		opt.ApplyToHelper(o)
	}
	if unchanged(p.before, obj, o.IncludeStatusObservedGeneration) {
		return nil
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	if o.IncludeStatusObservedGeneration {
		if err := unstructured.SetNestedField(after, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(after, obj); err != nil {
			return err
		}
	}
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.before)
	if err != nil {
		return err
	}
	var owner []client.PatchOption
	var statusOwner []client.SubResourcePatchOption
	if o.FieldOwner != "" {
		owner = append(owner, client.FieldOwner(o.FieldOwner))
		statusOwner = append(statusOwner, client.FieldOwner(o.FieldOwner))
	}
	if !equality.Semantic.DeepEqual(before["spec"], after["spec"]) || !equality.Semantic.DeepEqual(before["metadata"], after["metadata"]) {
		if err := p.client.Patch(ctx, obj, client.MergeFrom(p.before), owner...); err != nil {
			return err
		}
	}
	if !equality.Semantic.DeepEqual(before["status"], after["status"]) {
		if err := p.client.Status().Patch(ctx, obj, client.MergeFrom(p.before), statusOwner...); err != nil {
			return err
		}
	}
	p.before = obj.DeepCopyObject().(client.Object)
	return nil
}

// RequestHandled returns the value of gitsync.dev/requested-at to record in
// status.lastHandledReconcileAt (the current one when there is none).
func RequestHandled(obj client.Object, current string) string {
	if v, ok := obj.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]; ok {
		return v
	}
	return current
}

// RetryLimiter backs off failed reconciles exponentially from base to max (1s to 5m
// when zero).
func RetryLimiter(base, max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if base == 0 {
		base = time.Second
	}
	if max == 0 {
		max = 5 * time.Minute
	}
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](base, max)
}

// unchanged tells, without converting either object to a map, that obj is still before
// and, when observed is set, already records its generation as observed: a routine
// resync (and each reconcile of a restart) writes nothing, and need not compare the
// two as unstructured maps to find out. Otherwise the maps decide.
func unchanged(before, obj client.Object, observed bool) bool {
	if observed {
		g, ok := obj.(interface{ GetObservedGeneration() int64 })
		if !ok || g.GetObservedGeneration() != obj.GetGeneration() {
			return false
		}
	}
	return equality.Semantic.DeepEqual(before, obj)
}

// MarkApplied sets an Application's Ready=True/Succeeded for revision, as applied and
// unchanged since: the sync that applied it and the drift reconciler that saw its drift
// go say the same.
func MarkApplied(app *gitsyncv1.Application, revision string) {
	conditions.MarkTrue(app, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "applied revision %s", revision)
}
