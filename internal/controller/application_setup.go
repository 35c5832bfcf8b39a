package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/applier"
)

// applicationSourceIndex indexes Applications by "<namespace>/<name>" of their GitRepository
// (helmSourceIndexKey for a HelmRepository).
const applicationSourceIndex = ".spec.sourceRef"

// ApplicationOptions tunes the Application controller.
type ApplicationOptions struct {
	MaxConcurrentReconciles int
	// RetryBase and RetryMax bound the exponential backoff after a failed sync.
	RetryBase, RetryMax time.Duration
}

// SetupWithManager registers the reconciler: it reacts to spec changes, to a new
// gitsync.dev/requested-at value and to a new artifact of the source.
func (r *ApplicationReconciler) SetupWithManager(mgr ctrl.Manager, opts ApplicationOptions) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("gitsync")
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
		applier, err := applier.NewWith(mgr.GetConfig(), mgr, applier.Options{DefaultServiceAccount: r.DefaultServiceAccount})
		if err != nil {
			return err
		}
		r.Applier = applier
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.Application{}, applicationSourceIndex,
		func(o client.Object) []string {
			return r.sourceIndexKeys(o.(*gitsyncv1.Application))
		}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.Application{}, builder.WithPredicates(inShard(r.Shard),
			predicate.Or(predicate.GenerationChangedPredicate{}, requestedAtChanged{}, deletionStarted{}, enteredShard{shard: r.Shard}))).
		Watches(&gitsyncv1.GitRepository{}, newRevisionFirst(handler.EnqueueRequestsFromMapFunc(r.applicationsForSource)),
			builder.WithPredicates(artifactChanged{})).
		Watches(&gitsyncv1.HelmRepository{}, newRevisionFirst(handler.EnqueueRequestsFromMapFunc(r.applicationsForSource)),
			builder.WithPredicates(artifactChanged{}))
	b = requestedNow(b, &gitsyncv1.Application{})
	b, err := r.watchReferences(mgr, b)
	if err != nil {
		return err
	}
	if r.Desired != nil {
		b = b.WatchesRawSource(channelAt(r.Desired.SyncRequests(), highPriority))
	}
	return b.
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             retryLimiter(opts.RetryBase, opts.RetryMax),
		}).
		Complete(r)
}

func (r *ApplicationReconciler) applicationsForSource(ctx context.Context, repo client.Object) []reconcile.Request {
	apps := &gitsyncv1.ApplicationList{}
	key := client.ObjectKeyFromObject(repo).String()
	if _, ok := repo.(*gitsyncv1.HelmRepository); ok {
		key = helmSourceIndexKey(client.ObjectKeyFromObject(repo))
	}
	if err := r.List(ctx, apps, client.MatchingFields{applicationSourceIndex: key}); err != nil {
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
	older, newer := artifactOf(e.ObjectOld), artifactOf(e.ObjectNew)
	if newer == nil {
		return false
	}
	return older == nil || older.Revision != newer.Revision || older.Digest != newer.Digest
}

// artifactOf is a source's status.artifact (nil for other objects).
func artifactOf(o client.Object) *gitsyncv1.Artifact {
	switch src := o.(type) {
	case *gitsyncv1.GitRepository:
		return src.Status.Artifact
	case *gitsyncv1.HelmRepository:
		return src.Status.Artifact
	}
	return nil
}

// deletionStarted passes the update that sets the deletion timestamp.
type deletionStarted struct {
	updatesOnly
}

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}
