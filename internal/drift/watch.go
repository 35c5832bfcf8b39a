// Package drift watches the objects gitsync applied and tells what drifted from Git:
// label-selected, metadata-only watches per kind (so the API server sends only gitsync's
// objects, and only their metadata), a per-object comparison with Git's version, the
// field managers that wrote the difference, and when to back off from a fight.
package drift

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ObjectRef identifies a managed object.
type ObjectRef struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// RefOf is the reference of an object.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	return ObjectRef{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ID is the inventory ID of the reference ("<namespace>_<name>_<group>_<kind>", as
// apply.EntryOf's).
func (r ObjectRef) ID() string {
	return r.Namespace + "_" + r.Name + "_" + r.GVK.Group + "_" + r.GVK.Kind
}

// Event says that a managed object changed in a way gitsync did not make, or went away
// (deleted, or its owner labels removed: it left the watch's label selection).
type Event struct {
	Object ObjectRef
	// Owner is the Application named by the object's labels.
	Owner types.NamespacedName
	// Gone is true when the object was deleted or lost its owner labels.
	Gone bool
}

// Watches runs one metadata-only informer per kind that appears in some inventory,
// selecting the objects that carry gitsync's owner label.
type Watches struct {
	client   metadata.Interface
	resource func(schema.GroupVersionKind) (schema.GroupVersionResource, error)
	handler  func(Event)

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]*watch
	// vanished holds the kinds whose watch stopped because the API server no longer
	// serves them (their CRD was deleted). Sync does not start them again until a list
	// finds them served; OnVanish hears of each once.
	vanished map[schema.GroupVersionKind]bool
	// OnVanish, when set, is told of a kind whose watch stopped because the API server
	// no longer serves it. Set it before the first Sync.
	OnVanish func(schema.GroupVersionKind)

	// watched, when set, names objects to report on any update, not only on one that
	// changed another writer's managedFields entry: the entries record times to the
	// second, so a writer that puts a value back within the same second (undoing drift
	// that is being reported) leaves them as they were.
	watched func(ObjectRef) bool

	// shared holds the values the cached objects share (see compact).
	shared sharedValues
}

// WatchClosely makes every update of the objects for which watched is true an Event
// (see the field). Call it before Sync.
func (w *Watches) WatchClosely(watched func(ObjectRef) bool) { w.watched = watched }

type watch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	// gone is closed when the kind turned out not to be served (see Watches.vanished).
	gone     chan struct{}
	goneOnce sync.Once
}

// synced waits until the watch has its first list, or is gone, or ctx ends; it tells
// whether the first list is in.
func (wt *watch) synced(ctx context.Context) bool {
	// The informer closes this channel at its first list: no polling (client-go's
	// WaitForCacheSync looks every 100 ms, which a new kind's first sync would wait for).
	select {
	case <-wt.informer.HasSyncedChecker().Done():
		return true
	case <-wt.gone:
		return false
	case <-ctx.Done():
		return false
	}
}

// NewWatches returns Watches that call handler for every Event. resource maps a kind to
// its resource (a RESTMapper lookup).
func NewWatches(client metadata.Interface, resource func(schema.GroupVersionKind) (schema.GroupVersionResource, error), handler func(Event)) *Watches {
	return &Watches{client: client, resource: resource, handler: handler,
		informers: map[schema.GroupVersionKind]*watch{}, vanished: map[schema.GroupVersionKind]bool{}}
}

// Sync makes the watched kinds equal to kinds: it starts an informer for each new kind,
// stops the informers of kinds no longer listed, and waits until every informer of kinds
// has its first list (also one that a concurrent Sync started: its caller may read the
// cache as soon as Sync returns). A kind the API server does not serve is not waited
// for: its watch stops (see OnVanish) and starts again in a later Sync that finds the
// kind served (one list request per Sync while it is not).
func (w *Watches) Sync(ctx context.Context, kinds map[schema.GroupVersionKind]bool) error {
	w.revive(ctx, kinds)
	w.mu.Lock()
	var started []*watch
	var errs []error
	for gvk := range kinds {
		if wt, ok := w.informers[gvk]; ok {
			started = append(started, wt)
			continue
		}
		if w.vanished[gvk] {
			continue
		}
		wt, err := w.start(gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.informers[gvk] = wt
		started = append(started, wt)
	}
	for gvk, wt := range w.informers {
		if !kinds[gvk] {
			wt.stop()
			delete(w.informers, gvk)
		}
	}
	for gvk := range w.vanished {
		if !kinds[gvk] {
			delete(w.vanished, gvk)
		}
	}
	w.mu.Unlock()

	for _, wt := range started {
		if !wt.synced(ctx) && ctx.Err() != nil {
			return fmt.Errorf("waiting for a watch to sync: %w", ctx.Err())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("starting watches: %v", errs)
	}
	return nil
}

// Stop stops every informer.
func (w *Watches) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvk, wt := range w.informers {
		wt.stop()
		delete(w.informers, gvk)
	}
}

// Kinds returns the watched kinds, sorted.
func (w *Watches) Kinds() []schema.GroupVersionKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := make([]schema.GroupVersionKind, 0, len(w.informers))
	for gvk := range w.informers {
		kinds = append(kinds, gvk)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	return kinds
}

// Cached returns the watch cache's copy of an object's metadata, if its kind is
// watched and the object is there.
func (w *Watches) Cached(ref ObjectRef) (*Meta, bool) {
	m, _ := w.Lookup(ref)
	return m, m != nil
}

// Lookup returns the watch cache's copy of an object's metadata (nil when it is not
// there) and whether the cache can tell: its kind is watched and the first list is in.
// With synced true and no object, no object of that name carries an owner label, as
// far as the watch has seen.
func (w *Watches) Lookup(ref ObjectRef) (m *Meta, synced bool) {
	w.mu.Lock()
	wt, ok := w.informers[ref.GVK]
	w.mu.Unlock()
	if !ok || !wt.informer.HasSynced() {
		return nil, false
	}
	key := ref.Name
	if ref.Namespace != "" {
		key = ref.Namespace + "/" + ref.Name
	}
	obj, exists, err := wt.informer.GetStore().GetByKey(key)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	m, _ = obj.(*Meta)
	return m, m != nil
}

// revive forgets the vanished kinds among kinds that the API server serves again.
func (w *Watches) revive(ctx context.Context, kinds map[schema.GroupVersionKind]bool) {
	w.mu.Lock()
	var check []schema.GroupVersionKind
	for gvk := range w.vanished {
		if kinds[gvk] {
			check = append(check, gvk)
		}
	}
	w.mu.Unlock()
	for _, gvk := range check {
		gvr, err := w.resource(gvk)
		if err != nil {
			continue
		}
		_, err = w.client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: gitsyncv1.ApplicationLabel})
		if KindNotServed(err) {
			continue
		}
		w.mu.Lock()
		delete(w.vanished, gvk)
		w.mu.Unlock()
	}
}

// vanish stops the watch of a kind the API server no longer serves.
func (w *Watches) vanish(gvk schema.GroupVersionKind, wt *watch) {
	first := false
	wt.goneOnce.Do(func() {
		close(wt.gone)
		first = true
	})
	if !first {
		return
	}
	wt.stop()
	w.mu.Lock()
	if w.informers[gvk] == wt {
		delete(w.informers, gvk)
	}
	w.vanished[gvk] = true
	w.mu.Unlock()
	if w.OnVanish != nil {
		w.OnVanish(gvk)
	}
}

// KindNotServed tells whether err says that the API server does not serve the kind of
// the request at all (its CRD is gone, or going: the 404 of an unknown resource, which
// client-go words "the server could not find the requested resource", or the refusal
// of a create while the CRD terminates, or a RESTMapper that no longer maps it), rather
// than that one object does not exist.
func KindNotServed(err error) bool {
	if meta.IsNoMatchError(err) { // the RESTMapper no longer knows it
		return true
	}
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	switch {
	case apierrors.IsNotFound(err):
		return s.Details == nil || s.Details.Name == "" || strings.Contains(s.Message, "could not find the requested resource")
	case apierrors.IsForbidden(err), apierrors.IsMethodNotSupported(err):
		return strings.Contains(s.Message, "custom resource definition is terminating")
	}
	return false
}

func (w *Watches) start(gvk schema.GroupVersionKind) (*watch, error) {
	gvr, err := w.resource(gvk)
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	informer := metadatainformer.NewFilteredMetadataInformer(w.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = gitsyncv1.ApplicationLabel }).Informer()
	wt := &watch{informer: informer, gone: make(chan struct{})}
	if err := informer.SetTransform(w.compact); err != nil {
		return nil, err
	}
	err = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if KindNotServed(err) {
			w.vanish(gvk, wt)
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	if err != nil {
		return nil, err
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldMeta, ok1 := oldObj.(*Meta)
			newMeta, ok2 := newObj.(*Meta)
			if !ok1 || !ok2 {
				return
			}
			if !ChangedByOthers(oldMeta, newMeta) && !(w.watched != nil && oldMeta.resourceVersion != newMeta.resourceVersion &&
				w.watched(ObjectRef{GVK: gvk, Namespace: newMeta.namespace, Name: newMeta.name})) {
				return
			}
			w.emit(gvk, newMeta, false)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if m, ok := obj.(*Meta); ok {
				w.emit(gvk, m, true)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	wt.stop = cancel
	go informer.RunWithContext(ctx)
	return wt, nil
}

func (w *Watches) emit(gvk schema.GroupVersionKind, m *Meta, gone bool) {
	owner, ok := OwnerOf(m.GetLabels())
	if !ok {
		return
	}
	w.handler(Event{
		Object: ObjectRef{GVK: gvk, Namespace: m.GetNamespace(), Name: m.GetName()},
		Owner:  owner,
		Gone:   gone,
	})
}

// OwnerOf reads the Application named by gitsync's owner labels.
func OwnerOf(labels map[string]string) (types.NamespacedName, bool) {
	name, ok := labels[gitsyncv1.ApplicationLabel]
	if !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: labels[gitsyncv1.ApplicationNamespaceLabel], Name: name}, true
}
