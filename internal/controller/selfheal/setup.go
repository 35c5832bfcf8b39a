package selfheal

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
)

// SetupWithManager registers the drift controller with concurrent workers and the fair
// queue (SetupWithOptions).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrent int) error {
	return r.SetupWithOptions(mgr, kit.Options{MaxConcurrentReconciles: concurrent})
}

// SetupWithOptions registers the drift controller: its queue is fed by the watches on
// managed objects (and by the backstop), keyed by Application, and is fair between
// namespaces unless opts.SharedQueue (the other options are the Application
// controller's; the drift controller has no retry limiter of its own).
func (r *Reconciler) SetupWithOptions(mgr ctrl.Manager, opts kit.Options) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Fights == nil {
		r.Fights = drift.NewFights(time.Now)
	}
	if r.Applier == nil {
		applier, err := impersonate.New(mgr.GetConfig(), mgr)
		if err != nil {
			return err
		}
		r.Applier = applier
	}
	if r.Watches == nil {
		mc, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("creating the metadata client: %w", err)
		}
		mapper := mgr.GetRESTMapper()
		r.Watches = drift.NewWatches(mc, func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return schema.GroupVersionResource{}, err
			}
			return m.Resource, nil
		}, r.OnEvent)
		r.Watches.WatchClosely(r.isDrifted)
		log := mgr.GetLogger().WithName("drift")
		r.Watches.OnVanish = func(gvk schema.GroupVersionKind) {
			log.Info("kind no longer served: its drift watch stopped until a sync applies it again", "kind", gvk.String())
		}
		// The watches stop with the manager.
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			r.Watches.Stop()
			return nil
		})); err != nil {
			return err
		}
	}
	r.Desired.Attach(r.Watches, r)
	return ctrl.NewControllerManagedBy(mgr).
		Named("drift").
		WatchesRawSource(kit.ChannelAt(r.wake, kit.HighPriority)).
		WatchesRawSource(kit.ChannelAt(r.wakeLater, kit.LowPriority)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, NewQueue: kit.NewQueue(opts.SharedQueue)}).
		Complete(r)
}
