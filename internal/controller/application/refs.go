package application

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// applicationRefsIndex indexes Applications by the Secrets and ConfigMaps their render
// reads ("Secret/<namespace>/<name>"): spec.decryption.secretRef,
// spec.postBuild.substituteFrom and spec.helm.valuesFrom, all in the Application's
// namespace.
const applicationRefsIndex = ".spec.renderReferences"

// renderRefs lists the index keys of app's references.
func renderRefs(app *gitsyncv1.Application) []string {
	var keys []string
	add := func(kind, name string) { keys = append(keys, kind+"/"+app.Namespace+"/"+name) }
	if d := app.Spec.Decryption; d != nil {
		add("Secret", d.SecretRef.Name)
	}
	if pb := app.Spec.PostBuild; pb != nil {
		for _, ref := range pb.SubstituteFrom {
			add(ref.Kind, ref.Name)
		}
	}
	if h := app.Spec.Helm; h != nil {
		for _, ref := range h.ValuesFrom {
			kind := ref.Kind
			if kind != "Secret" {
				kind = "ConfigMap"
			}
			add(kind, ref.Name)
		}
	}
	return keys
}

// watchReferences indexes the Applications by their references and watches Secrets and
// ConfigMaps (metadata only: no value is cached) so that a change of one an
// Application's render reads re-syncs it, past the quiet backstop (see changedRefs).
func (r *Reconciler) watchReferences(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.Application{}, applicationRefsIndex,
		func(o client.Object) []string { return renderRefs(o.(*gitsyncv1.Application)) }); err != nil {
		return nil, err
	}
	return b.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.applicationsReading("Secret")), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.applicationsReading("ConfigMap")), builder.OnlyMetadata), nil
}

// applicationsReading maps a Secret or ConfigMap to the Applications that read it, and
// marks them for a full sync.
func (r *Reconciler) applicationsReading(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		apps := &gitsyncv1.ApplicationList{}
		key := kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if err := r.List(ctx, apps, client.InNamespace(o.GetNamespace()), client.MatchingFields{applicationRefsIndex: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing applications that read an object", "kind", kind, "object", client.ObjectKeyFromObject(o))
			return nil
		}
		var reqs []reconcile.Request
		for i := range apps.Items {
			if !r.Shard.Owns(&apps.Items[i]) {
				continue
			}
			app := client.ObjectKeyFromObject(&apps.Items[i])
			r.refsChanged.mark(app)
			reqs = append(reqs, reconcile.Request{NamespacedName: app})
		}
		return reqs
	}
}

// changedRefs holds the Applications one of whose references changed since their last
// render: their next reconcile renders again even when nothing else changed.
type changedRefs struct {
	mu   sync.Mutex
	apps map[types.NamespacedName]bool
}

func (c *changedRefs) mark(app types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apps == nil {
		c.apps = map[types.NamespacedName]bool{}
	}
	c.apps[app] = true
}

// take reports whether app's references changed, and forgets it.
func (c *changedRefs) take(app types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.apps[app]
	delete(c.apps, app)
	return changed
}
