package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// statusObject is a gitsync kind whose conditions the patch helper manages.
type statusObject interface {
	client.Object
	conditions.Setter
}

// patchStatus writes what a reconcile changed in status (nothing when nothing changed).
// owned are the condition types this controller owns. Only a finished reconcile (not
// Reconciling) records the generation it observed, as kstatus expects.
func patchStatus(ctx context.Context, patcher *patch.SerialPatcher, obj statusObject, owned []string, final bool) error {
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

// requestHandled returns the value of gitsync.dev/requested-at to record in
// status.lastHandledReconcileAt (the current one when there is none).
func requestHandled(obj client.Object, current string) string {
	if v, ok := obj.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]; ok {
		return v
	}
	return current
}

// retryLimiter backs off failed reconciles exponentially from base to max (1s to 5m
// when zero).
func retryLimiter(base, max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	if base == 0 {
		base = time.Second
	}
	if max == 0 {
		max = 5 * time.Minute
	}
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](base, max)
}
