// Package applicationset is the ApplicationSet controller: it creates, updates and
// deletes the Applications a set generates, and rolls a new revision out to them step by
// step.
package applicationset

import (
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// +kubebuilder:rbac:groups=gitsync.dev,resources=applicationsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applicationsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applicationsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=gitsync.dev,resources=applications,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gitsync.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=gitsync.dev,resources=gitrepositories,verbs=get;list;watch

// Reconciler generates the Applications of ApplicationSets.
type Reconciler struct {
	client.Client
	// APIReader reads the generated Applications and their sources uncached: a rollout
	// never advances on a stale status.
	APIReader client.Reader
	// Storage holds the GitRepositories' checkouts the Git generators read.
	Storage  sourceid.Checkouts
	Recorder recorder.EventRecorder
	// PullRequests lists a pullRequest generator's pull requests (nil: not available).
	PullRequests func(ctx context.Context, set *gitsyncv1.ApplicationSet, gen *gitsyncv1.PullRequestGenerator) ([]appset.Params, error)
	// Shard is the shard of ApplicationSets this replica reconciles.
	Shard shard.Shard
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	applied sync.Map // types.NamespacedName of an Application → appliedRecord
	memo    memo
}

// Options tunes the controller.
type Options = kit.Options

// SetupWithManager registers the controller: it reacts to the set's spec and resume
// requests, to any change of an Application it generated (a hand edit, a status that
// lets a rollout go on), to a GitRepository's new artifact and to Clusters.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.ApplicationSet{}, builder.WithPredicates(kit.InShard(r.Shard), predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, deletionStarted{}))).
		Owns(&gitsyncv1.Application{}).
		Watches(&gitsyncv1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.setsInNamespace),
			builder.WithPredicates(artifactChanged{})).
		Watches(&gitsyncv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.setsInNamespace),
			builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, versionChanged{})))
	_, err := opts.Build(b, r)
	return err
}

// setsInNamespace enqueues the ApplicationSets of obj's namespace.
func (r *Reconciler) setsInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &gitsyncv1.ApplicationSetList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ApplicationSets")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
	}
	return out
}

type deletionStarted struct{ predicate.Funcs }

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// artifactChanged passes a GitRepository whose artifact revision changed.
type artifactChanged struct{ predicate.Funcs }

func (artifactChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*gitsyncv1.GitRepository)
	n, ok2 := e.ObjectNew.(*gitsyncv1.GitRepository)
	if !ok1 || !ok2 {
		return false
	}
	return revisionOf(o) != revisionOf(n)
}

func revisionOf(repo *gitsyncv1.GitRepository) string {
	if repo.Status.Artifact == nil {
		return ""
	}
	return repo.Status.Artifact.Revision
}

// versionChanged passes a Cluster whose Kubernetes version changed.
type versionChanged struct{ predicate.Funcs }

func (versionChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*gitsyncv1.Cluster)
	n, ok2 := e.ObjectNew.(*gitsyncv1.Cluster)
	return ok1 && ok2 && o.Status.KubernetesVersion != n.Status.KubernetesVersion
}
