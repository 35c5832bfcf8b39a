package sources

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// gitRepositorySecretIndex indexes GitRepositories by the Secrets their spec.secretRef and
// spec.verify.secretRef name.
const gitRepositorySecretIndex = ".spec.secretRef.name"

// GitRepositoryOptions tunes the GitRepository controller (retries: after a failed poll).
type GitRepositoryOptions = kit.Options

// SetupWithManager registers the reconciler: it reacts to spec changes, to a new
// gitsync.dev/requested-at value, and to changes of the Secret a repository references.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts GitRepositoryOptions) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := indexSecretRef(mgr, &gitsyncv1.GitRepository{}, gitRepositorySecretIndex, func(o client.Object) []string {
		spec := o.(*gitsyncv1.GitRepository).Spec
		var names []string
		if spec.SecretRef != nil {
			names = append(names, spec.SecretRef.Name)
		}
		if spec.Verify != nil {
			names = append(names, spec.Verify.SecretRef.Name)
		}
		return names
	}); err != nil {
		return err
	}

	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.GitRepository{}, builder.WithPredicates(kit.InShard(r.Shard),
			kit.NotRequested(),
			predicate.Or(predicate.GenerationChangedPredicate{}, kit.EnteredShard{Shard: r.Shard})))
	b = kit.RequestedNow(b, &gitsyncv1.GitRepository{}).
		// Metadata only: the Secret's data is read uncached at reconcile time.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.repositoriesForSecret),
			builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}))
	return opts.Apply(b).Complete(r)
}

func (r *GitRepositoryReconciler) repositoriesForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	return sourcesForSecret(ctx, r.Client, &gitsyncv1.GitRepositoryList{}, gitRepositorySecretIndex, secret, r.Shard)
}

// sourcesForSecret lists the sources (list: a GitRepositoryList or HelmRepositoryList)
// whose spec.secretRef names secret, by the field index, and that owner's shard holds.
func sourcesForSecret(ctx context.Context, c client.Client, list client.ObjectList, index string, secret client.Object, owner shard.Shard) []reconcile.Request {
	if err := c.List(ctx, list, client.InNamespace(secret.GetNamespace()), client.MatchingFields{index: secret.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing sources for a secret", "secret", secret.GetName())
		return nil
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if o, ok := item.(client.Object); ok && owner.Owns(o) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	}
	return reqs
}

// indexSecretRef indexes a source kind by the names of the Secrets it references.
func indexSecretRef(mgr ctrl.Manager, obj client.Object, index string, names func(client.Object) []string) error {
	return mgr.GetFieldIndexer().IndexField(context.Background(), obj, index, names)
}
