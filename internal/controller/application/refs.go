package application

import (
	"context"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

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
// A kind is watched from when the first Application that reads one of its kind is
// seen: until then no Secret or ConfigMap of the cluster is cached (their metadata,
// gitsync's own ConfigMaps included, was most of the cache where no Application reads
// one). The watch's first list re-syncs the Applications that read one, so a change
// between their render and the list is not missed. The returned func takes the
// controller built from b.
func (r *Reconciler) watchReferences(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, func(controller.Controller), error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.Application{}, applicationRefsIndex,
		func(o client.Object) []string { return renderRefs(o.(*gitsyncv1.Application)) }); err != nil {
		return nil, nil, err
	}
	w := &refWatches{cache: mgr.GetCache(), log: mgr.GetLogger().WithName("references"), wanted: map[string]bool{}, started: map[string]bool{},
		handlers: map[string]handler.EventHandler{
			"Secret":    handler.EnqueueRequestsFromMapFunc(r.applicationsReading("Secret")),
			"ConfigMap": handler.EnqueueRequestsFromMapFunc(r.applicationsReading("ConfigMap")),
		}}
	need := func(o client.Object) {
		if app, ok := o.(*gitsyncv1.Application); ok && r.Shard.Owns(app) {
			w.need(renderRefs(app))
		}
	}
	return b.Watches(&gitsyncv1.Application{}, handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			need(e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			need(e.ObjectNew)
		},
	}), w.attach, nil
}

// refWatches starts the watch of a referenced kind (Secret, ConfigMap) once some
// Application reads one of that kind.
type refWatches struct {
	mu       sync.Mutex
	cache    cache.Cache
	log      logr.Logger
	handlers map[string]handler.EventHandler
	ctrl     controller.Controller
	wanted   map[string]bool
	started  map[string]bool
}

// need asks for the watches of the kinds of refs (renderRefs keys).
func (w *refWatches) need(refs []string) {
	if len(refs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ref := range refs {
		kind, _, _ := strings.Cut(ref, "/")
		w.wanted[kind] = true
	}
	w.start()
}

// attach gives the controller whose queue the watches feed.
func (w *refWatches) attach(c controller.Controller) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctrl = c
	w.start()
}

// start starts the wanted watches not started yet; the caller holds w.mu. Each is
// started beside the caller, never in it: need runs in the Application informer's
// handler, and Controller.Watch takes the controller's lock, which Controller.Start holds
// while it waits for that same handler to deliver the informer's first list. Started
// inline, a restart with any Application that reads a Secret or ConfigMap deadlocked the
// controller until its cache-sync timeout ended the operator, again at every restart.
func (w *refWatches) start() {
	if w.ctrl == nil {
		return
	}
	for kind := range w.wanted {
		if w.started[kind] {
			continue
		}
		h, ok := w.handlers[kind]
		if !ok {
			continue
		}
		w.started[kind] = true
		go w.watch(w.ctrl, kind, h)
	}
}

// watch starts the watch of kind on c; on failure the next need tries again.
func (w *refWatches) watch(c controller.Controller, kind string, h handler.EventHandler) {
	obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	if err := c.Watch(source.Kind(w.cache, client.Object(obj), h)); err != nil {
		w.log.Error(err, "watching the objects Applications read", "kind", kind)
		w.mu.Lock()
		w.started[kind] = false
		w.mu.Unlock()
	}
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
