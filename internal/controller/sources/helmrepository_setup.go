package sources

import (
	"strings"

	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// helmRepositorySecretIndex indexes HelmRepositories by the Secret their spec.secretRef names.
const helmRepositorySecretIndex = ".spec.secretRef.name"

// HelmRepositoryOptions tunes the HelmRepository controller (retries: after a failed poll).
type HelmRepositoryOptions = kit.Options

// SetupWithManager registers the reconciler: it reacts to spec changes, a new
// gitsync.dev/requested-at value, changes of the Secret a repository references, and (for
// oci:// repositories, whose tags are listed per chart) an Application naming a new chart.
// The Application controller, set up first, registers the index of Applications by source.
func (r *HelmRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts HelmRepositoryOptions) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := indexSecretRef(mgr, &gitsyncv1.HelmRepository{}, helmRepositorySecretIndex, func(o client.Object) []string {
		if ref := o.(*gitsyncv1.HelmRepository).Spec.SecretRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.HelmRepository{}, builder.WithPredicates(kit.InShard(r.Shard),
			kit.NotRequested(),
			predicate.Or(predicate.GenerationChangedPredicate{}, kit.EnteredShard{Shard: r.Shard})))
	b = kit.RequestedNow(b, &gitsyncv1.HelmRepository{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.repositoriesForSecret),
			builder.OnlyMetadata, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&gitsyncv1.Application{}, handler.EnqueueRequestsFromMapFunc(r.ociRepositoryOf),
			builder.WithPredicates(chartNamed{}))
	return opts.Apply(b).Complete(r)
}

func (r *HelmRepositoryReconciler) repositoriesForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	return sourcesForSecret(ctx, r.Client, &gitsyncv1.HelmRepositoryList{}, helmRepositorySecretIndex, secret, r.Shard)
}

// ociRepositoryOf enqueues the oci:// HelmRepositories of an Application (of each of its
// sources; their tag lists follow the charts that Applications name); an https
// repository's index holds every chart.
func (r *HelmRepositoryReconciler) ociRepositoryOf(ctx context.Context, o client.Object) []reconcile.Request {
	app, ok := o.(*gitsyncv1.Application)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for i, src := range app.SourceList() {
		if src.SourceRef.Kind != gitsyncv1.HelmRepositoryKind {
			continue
		}
		key := sourceid.Key(app.ForSource(i))
		repo := &gitsyncv1.HelmRepository{}
		if err := r.Get(ctx, key, repo); err != nil || !chartrepo.IsOCI(repo.Spec.URL) || !r.Shard.Owns(repo) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: key})
	}
	return reqs
}

// chartNamed passes a new Application and one whose spec.helm.chart changed.
type chartNamed struct {
	predicate.Funcs
}

func (chartNamed) Create(event.CreateEvent) bool { return true }

func (chartNamed) Update(e event.UpdateEvent) bool {
	return chartOf(e.ObjectOld) != chartOf(e.ObjectNew)
}

func chartOf(o client.Object) string {
	app, ok := o.(*gitsyncv1.Application)
	if !ok {
		return ""
	}
	var charts []string
	for _, src := range app.SourceList() {
		if src.Helm != nil {
			charts = append(charts, src.SourceRef.Name+"/"+src.Helm.Chart)
		}
	}
	return strings.Join(charts, ",")
}
