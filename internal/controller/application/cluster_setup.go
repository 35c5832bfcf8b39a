package application

import (
	"context"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// setupClusters makes Applier send an Application with spec.cluster to its Cluster
// (the local Applier stays for the rest, and for what a render reads), makes Clusters
// when the operator gave none, and indexes Applications by Cluster.
func (r *Reconciler) setupClusters(mgr ctrl.Manager) error {
	if r.Clusters == nil {
		r.Clusters = &cluster.Clients{Reader: r.APIReader, Scheme: mgr.GetScheme()}
	}
	if r.remote == nil {
		r.remote = newRemoteDrift()
	}
	if r.localApply == nil {
		r.localApply = r.Applier
		r.Applier = r.clusterApplier(r.localApply)
	}
	// The watches on other clusters end with the manager: an open watch keeps a
	// connection (and the remote API server's shutdown) waiting.
	remote := r.remote
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		remote.stopAll()
		return nil
	})); err != nil {
		return err
	}
	return mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.Application{}, clusterIndex, clusterIndexKeys)
}

// localApplier is the Applier of this cluster, whatever app's spec.cluster says.
func (r *Reconciler) localApplier(app *gitsyncv1.Application) (*apply.Manager, error) {
	if r.localApply != nil {
		return r.localApply(app)
	}
	return r.Applier(app)
}

// watchClusters wakes the Applications of a Cluster when its Ready condition changes
// (reachable again, or not) or its spec does; its probes' lastProbeTime alone wakes none.
func (r *Reconciler) watchClusters(b *builder.Builder) *builder.Builder {
	return b.Watches(&gitsyncv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.applicationsOnCluster),
		builder.WithPredicates(clusterReadyChanged{})).
		WatchesRawSource(kit.ChannelAt(r.remote.wake, kit.HighPriority))
}

func (r *Reconciler) applicationsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	apps := &gitsyncv1.ApplicationList{}
	if err := r.List(ctx, apps, client.MatchingFields{clusterIndex: client.ObjectKeyFromObject(o).String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing applications on a cluster", "cluster", client.ObjectKeyFromObject(o))
		return nil
	}
	var reqs []reconcile.Request
	for i := range apps.Items {
		if r.Shard.Owns(&apps.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
		}
	}
	return reqs
}

// clusterReadyChanged passes a Cluster's creation, deletion, a spec change and a change
// of its Ready condition's status or reason.
type clusterReadyChanged struct {
	predicate.Funcs
}

func (clusterReadyChanged) Update(e event.UpdateEvent) bool {
	older, ok1 := e.ObjectOld.(*gitsyncv1.Cluster)
	newer, ok2 := e.ObjectNew.(*gitsyncv1.Cluster)
	if !ok1 || !ok2 {
		return false
	}
	if older.Generation != newer.Generation || older.Status.ObservedGeneration != newer.Status.ObservedGeneration {
		return true
	}
	a, b := conditions.Get(older, gitsyncv1.ReadyCondition), conditions.Get(newer, gitsyncv1.ReadyCondition)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason
}
