// Package notification reconciles Providers and Alerts and routes the reconcilers'
// events to the matching Alerts.
package notification

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/notify"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// +kubebuilder:rbac:groups=gitsync.dev,resources=providers;alerts,verbs=get;list;watch
// +kubebuilder:rbac:groups=gitsync.dev,resources=providers/status;alerts/status,verbs=get;update;patch

// ProviderReconciler reports a Provider's Ready condition from its last delivery.
type ProviderReconciler struct {
	client.Client
	Results interface {
		LastResult(types.NamespacedName) (notify.Result, bool)
	}
	// Shard is the part of the Providers this replica reports; the zero Shard is all.
	Shard shard.Shard
}

// Reconcile sets Ready: True when the last delivery succeeded (or none happened yet),
// False/DeliveryFailed with the last delivery's error, False/Suspended when suspended.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &gitsyncv1.Provider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil || !r.Shard.Owns(obj) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := obj.DeepCopy()
	last, delivered := r.Results.LastResult(req.NamespacedName)
	switch {
	case obj.Spec.Suspend:
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.SuspendedReason, "deliveries are suspended")
	case delivered && last.Err != "":
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.DeliveryFailedReason, "last delivery at %s failed: %s",
			last.Time.UTC().Format("2006-01-02T15:04:05Z"), last.Err)
	case delivered:
		conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "last delivery at %s succeeded",
			last.Time.UTC().Format("2006-01-02T15:04:05Z"))
	default:
		conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "ready to deliver")
	}
	obj.Status.ObservedGeneration = obj.Generation
	return ctrl.Result{}, patchNotificationStatus(ctx, r.Client, before, obj, before.Status, obj.Status)
}

// AlertReconciler reports an Alert's Ready condition: its Provider exists and is Ready,
// and its regexes compile.
type AlertReconciler struct {
	client.Client
	// Shard is the part of the Alerts this replica reports; the zero Shard is all.
	Shard shard.Shard
}

// Reconcile sets Ready: False/InvalidSpec for a regex that does not compile,
// False/ProviderNotFound, False/DeliveryFailed when the Provider's last delivery failed.
func (r *AlertReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &gitsyncv1.Alert{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil || !r.Shard.Owns(obj) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := obj.DeepCopy()
	provider := &gitsyncv1.Provider{}
	perr := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.ProviderRef.Name}, provider)
	_, _, rerr := notify.Compile(obj)
	switch {
	case rerr != nil:
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.InvalidSpecReason, "%s", rerr)
	case apierrors.IsNotFound(perr):
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.ProviderNotFoundReason, "provider %s does not exist", obj.Spec.ProviderRef.Name)
	case perr != nil:
		return ctrl.Result{}, fmt.Errorf("reading provider: %w", perr)
	case obj.Spec.Suspend:
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.SuspendedReason, "alert is suspended")
	case conditions.GetReason(provider, gitsyncv1.ReadyCondition) == gitsyncv1.DeliveryFailedReason:
		conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, gitsyncv1.DeliveryFailedReason, "provider %s: %s",
			provider.Name, conditions.GetMessage(provider, gitsyncv1.ReadyCondition))
	default:
		conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "routing to provider %s", provider.Name)
	}
	obj.Status.ObservedGeneration = obj.Generation
	return ctrl.Result{}, patchNotificationStatus(ctx, r.Client, before, obj, before.Status, obj.Status)
}

// patchNotificationStatus writes the status once, when it changed.
func patchNotificationStatus(ctx context.Context, c client.Client, before, after client.Object, oldStatus, newStatus any) error {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return nil
	}
	if err := c.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status: %w", client.IgnoreNotFound(err))
	}
	return nil
}
