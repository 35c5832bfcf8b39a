package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// gitRepositorySecretIndex indexes GitRepositories by the Secret their spec.secretRef names.
const gitRepositorySecretIndex = ".spec.secretRef.name"

// GitRepositoryOptions tunes the GitRepository controller.
type GitRepositoryOptions struct {
	MaxConcurrentReconciles int
	// RetryBase and RetryMax bound the exponential backoff after a failed poll.
	RetryBase, RetryMax time.Duration
}

// SetupWithManager registers the reconciler: it reacts to spec changes, to a new
// gitsync.dev/requested-at value, and to changes of the Secret a repository references.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts GitRepositoryOptions) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("gitsync")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.GitRepository{}, gitRepositorySecretIndex,
		func(o client.Object) []string {
			repo := o.(*gitsyncv1.GitRepository)
			if repo.Spec.SecretRef == nil {
				return nil
			}
			return []string{repo.Spec.SecretRef.Name}
		}); err != nil {
		return err
	}

	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.GitRepository{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, requestedAtChanged{})))
	return requestedNow(b, &gitsyncv1.GitRepository{}).
		// Metadata only: the Secret's data is read uncached at reconcile time.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.repositoriesForSecret),
			builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			RateLimiter:             retryLimiter(opts.RetryBase, opts.RetryMax),
		}).
		Complete(r)
}

func (r *GitRepositoryReconciler) repositoriesForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	repos := &gitsyncv1.GitRepositoryList{}
	if err := r.List(ctx, repos, client.InNamespace(secret.GetNamespace()),
		client.MatchingFields{gitRepositorySecretIndex: secret.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing repositories for a secret", "secret", secret.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(repos.Items))
	for _, repo := range repos.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&repo)})
	}
	return reqs
}
