package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/patch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
