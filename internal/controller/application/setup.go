package application

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
)

// Options tunes the Application controller (retries: after a failed sync).
type Options = kit.Options

// SetupWithManager registers the reconciler: it reacts to spec changes, to a new
// gitsync.dev/requested-at value and to a new artifact of the source.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	if r.Config == nil {
		r.Config = mgr.GetConfig()
	}
	if r.Discovery == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(r.Config)
		if err != nil {
			return fmt.Errorf("creating the discovery client: %w", err)
		}
		r.Discovery = dc
	}
	if r.Applier == nil {
		applier, err := impersonate.NewWith(mgr.GetConfig(), mgr, impersonate.Options{DefaultServiceAccount: r.DefaultServiceAccount})
		if err != nil {
			return err
		}
		r.Applier = applier
	}
	if err := r.setupClusters(mgr); err != nil { // cluster_setup.go
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.Application{}, kit.ApplicationSourceIndex,
		func(o client.Object) []string {
			return r.sourceIndexKeys(o.(*gitsyncv1.Application))
		}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.Application{}, builder.WithPredicates(kit.InShard(r.Shard),
			kit.NotRequested(),
			predicate.Or(predicate.GenerationChangedPredicate{}, deletionStarted{}, kit.EnteredShard{Shard: r.Shard}))).
		Watches(&gitsyncv1.GitRepository{}, kit.NewRevisionFirst(handler.EnqueueRequestsFromMapFunc(r.applicationsForSource)),
			builder.WithPredicates(artifactChanged{})).
		Watches(&gitsyncv1.HelmRepository{}, kit.NewRevisionFirst(handler.EnqueueRequestsFromMapFunc(r.applicationsForSource)),
			builder.WithPredicates(artifactChanged{})).
		Watches(&gitsyncv1.OCIRepository{}, kit.NewRevisionFirst(handler.EnqueueRequestsFromMapFunc(r.applicationsForSource)),
			builder.WithPredicates(artifactChanged{}))
	b = kit.RequestedNow(b, &gitsyncv1.Application{})
	b = r.watchClusters(b) // cluster_setup.go
	b, attachRefs, err := r.watchReferences(mgr, b)
	if err != nil {
		return err
	}
	if r.Desired != nil {
		b = b.WatchesRawSource(kit.ChannelAt(r.Desired.SyncRequests(), kit.HighPriority))
	}
	c, err := opts.Build(b, r)
	if err != nil {
		return err
	}
	attachRefs(c)
	return nil
}

func (r *Reconciler) applicationsForSource(ctx context.Context, repo client.Object) []reconcile.Request {
	apps := &gitsyncv1.ApplicationList{}
	key := client.ObjectKeyFromObject(repo).String()
	switch repo.(type) {
	case *gitsyncv1.HelmRepository:
		key = kit.HelmSourceIndexKey(client.ObjectKeyFromObject(repo))
	case *gitsyncv1.OCIRepository:
		key = kit.OCISourceIndexKey(client.ObjectKeyFromObject(repo))
	}
	if err := r.List(ctx, apps, client.MatchingFields{kit.ApplicationSourceIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing applications of a source", "source", client.ObjectKeyFromObject(repo))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(apps.Items))
	for i := range apps.Items {
		if !r.Shard.Owns(&apps.Items[i]) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
	}
	return reqs
}

// artifactChanged passes source updates whose artifact revision or digest changed.
type artifactChanged struct {
	predicate.Funcs
}

func (artifactChanged) Create(event.CreateEvent) bool { return true }

func (artifactChanged) Update(e event.UpdateEvent) bool {
	older, newer := kit.ArtifactOf(e.ObjectOld), kit.ArtifactOf(e.ObjectNew)
	if newer == nil {
		return false
	}
	return older == nil || older.Revision != newer.Revision || older.Digest != newer.Digest
}

// deletionStarted passes the update that sets the deletion timestamp.
type deletionStarted struct {
	kit.UpdatesOnly
}

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}
