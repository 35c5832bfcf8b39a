package sources

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// ociRepositorySecretIndex indexes OCIRepositories by the Secret their spec.secretRef names.
const ociRepositorySecretIndex = ".spec.secretRef.name"

// OCIRepositoryOptions tunes the OCIRepository controller (retries: after a failed poll).
type OCIRepositoryOptions = kit.Options

// SetupWithManager registers the reconciler: it reacts to spec changes, a new
// gitsync.dev/requested-at value and changes of the Secret a repository references.
func (r *OCIRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts OCIRepositoryOptions) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := indexSecretRef(mgr, &gitsyncv1.OCIRepository{}, ociRepositorySecretIndex, func(o client.Object) []string {
		spec := o.(*gitsyncv1.OCIRepository).Spec
		var names []string
		if spec.SecretRef != nil {
			names = append(names, spec.SecretRef.Name)
		}
		if spec.Verify != nil && spec.Verify.SecretRef != nil {
			names = append(names, spec.Verify.SecretRef.Name)
		}
		return names
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.OCIRepository{}, builder.WithPredicates(kit.InShard(r.Shard),
			kit.NotRequested(),
			predicate.Or(predicate.GenerationChangedPredicate{}, kit.EnteredShard{Shard: r.Shard})))
	b = kit.RequestedNow(b, &gitsyncv1.OCIRepository{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.repositoriesForSecret),
			builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}))
	return opts.Apply(b).Complete(r)
}

func (r *OCIRepositoryReconciler) repositoriesForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	return sourcesForSecret(ctx, r.Client, &gitsyncv1.OCIRepositoryList{}, ociRepositorySecretIndex, secret, r.Shard)
}
