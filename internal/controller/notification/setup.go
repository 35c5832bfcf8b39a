package notification

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/notify"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// Setup starts the notification dispatcher and the Provider and Alert
// controllers, and returns the event recorder the reconcilers should use: it records
// events as before and also routes them to the matching Alerts. The controllers report
// the Providers and Alerts of shard sh (all with the zero Shard); the dispatcher sends
// what this replica's reconcilers record, to any matching Alert.
func Setup(mgr ctrl.Manager, opts notify.Options, sh shard.Shard) (recorder.EventRecorder, *notify.Dispatcher, error) {
	return SetupWithQueue(mgr, opts, sh, false)
}

// SetupWithQueue is Setup with the controllers' queues fair between namespaces
// (kit.FairQueue), or one priority queue for every namespace when sharedQueue.
func SetupWithQueue(mgr ctrl.Manager, opts notify.Options, sh shard.Shard, sharedQueue bool) (recorder.EventRecorder, *notify.Dispatcher, error) {
	queue := controller.Options{NewQueue: kit.NewQueue(sharedQueue)}
	results := make(chan event.GenericEvent, 256)
	opts.OnResult = func(p types.NamespacedName) {
		select {
		case results <- event.GenericEvent{Object: &gitsyncv1.Provider{ObjectMeta: objectMeta(p)}}:
		default: // a reconcile is already due; the Provider reads the latest result then
		}
	}
	d := notify.NewDispatcher(mgr.GetClient(), mgr.GetAPIReader(), opts)
	d.Log = mgr.GetLogger().WithName("notify")
	if err := mgr.Add(d); err != nil {
		return nil, nil, err
	}
	providers := &ProviderReconciler{Client: mgr.GetClient(), Results: d, Shard: sh}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.Provider{}, builder.WithPredicates(kit.InShard(sh),
			predicate.Or(predicate.GenerationChangedPredicate{}, kit.EnteredShard{Shard: sh}))).
		WatchesRawSource(source.Channel(results, &handler.EnqueueRequestForObject{})).
		WithOptions(queue).
		Complete(providers); err != nil {
		return nil, nil, fmt.Errorf("setting up the Provider controller: %w", err)
	}
	alerts := &AlertReconciler{Client: mgr.GetClient(), Shard: sh}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.Alert{}, builder.WithPredicates(kit.InShard(sh),
			predicate.Or(predicate.GenerationChangedPredicate{}, kit.EnteredShard{Shard: sh}))).
		Watches(&gitsyncv1.Provider{}, handler.EnqueueRequestsFromMapFunc(alertsOfProvider(mgr.GetClient(), sh))).
		WithOptions(queue).
		Complete(alerts); err != nil {
		return nil, nil, fmt.Errorf("setting up the Alert controller: %w", err)
	}
	return notify.Recorder{EventRecorder: kit.EventRecorder(mgr), Dispatcher: d}, d, nil
}

func alertsOfProvider(c client.Client, sh shard.Shard) handler.MapFunc {
	return func(ctx context.Context, p client.Object) []reconcile.Request {
		list := &gitsyncv1.AlertList{}
		if err := c.List(ctx, list, client.InNamespace(p.GetNamespace())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			if list.Items[i].Spec.ProviderRef.Name == p.GetName() && sh.Owns(&list.Items[i]) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return reqs
	}
}

func objectMeta(key types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
}
