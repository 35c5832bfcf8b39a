package desired

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// Prepare starts the watches of the kinds of objs (those the API server knows already)
// before they are applied, so that the first change after the apply is seen. The kinds
// stay watched until the Application's Applied or Forget, so that another Application's
// sync meanwhile does not stop them. The wait for the watches is bounded.
func (s *Store) Prepare(ctx context.Context, app types.NamespacedName, objs []*unstructured.Unstructured) {
	var prepared []schema.GroupVersionKind
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); !slices.Contains(prepared, gvk) {
			prepared = append(prepared, gvk)
		}
	}
	s.mu.Lock()
	s.setKinds(s.prepared, app, prepared)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	// Kinds whose CRD is in this very render fail until it is applied; Applied retries.
	_ = s.syncWatches(ctx)
}

// prepareTimeout bounds Prepare's wait for new watches to list their objects.
const prepareTimeout = 30 * time.Second

// Applied records the objects of a successful sync as the Application's desired state,
// makes the watched kinds those of every recorded Application, and tells the listener.
func (s *Store) Applied(ctx context.Context, app types.NamespacedName, objs []*unstructured.Unstructured) error {
	rec, err := record(objs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.objects[app] = rec
	s.setKinds(s.desiredKinds, app, rec.kinds) // never changed: a new state is a new record
	delete(s.unsure, app)
	s.setKinds(s.prepared, app, nil)
	s.mu.Unlock()
	err = s.syncWatches(ctx)
	if s.listener != nil {
		s.listener.Applied(app, rec.objectRefs())
	}
	return err
}

// Forget drops an Application (deleted, suspended, or failed to render) and stops the
// watches of kinds no other Application has.
func (s *Store) Forget(ctx context.Context, app types.NamespacedName) {
	s.mu.Lock()
	var refs []drift.ObjectRef
	if rec := s.objects[app]; rec != nil {
		refs = rec.objectRefs()
	}
	delete(s.objects, app)
	s.setKinds(s.desiredKinds, app, nil)
	delete(s.unsure, app)
	s.setKinds(s.prepared, app, nil)
	s.mu.Unlock()
	if s.listener != nil {
		s.listener.Forgotten(app, refs)
	}
	_ = s.syncWatches(ctx)
}

// CheckAll asks for a check of the Application's desired objects (after its desired
// state was restored from the last applied revision, whose objects may have drifted while
// no one watched), at low priority: part of a cold start. An object whose cached
// metadata shows it untouched since gitsync applied it (drift.Untouched) needs no check:
// a restart with nothing changed reads no object.
func (s *Store) CheckAll(app types.NamespacedName) {
	if s.listener == nil || s.watches == nil {
		return
	}
	s.mu.Lock()
	rec := s.objects[app]
	s.mu.Unlock()
	// Outside the lock: a record never changes (a new state is a new record), and the
	// restores of a restart check every Application at once.
	var refs []drift.ObjectRef
	if rec != nil {
		rr := rec.reader()
		for i := range rec.refs {
			ref := rec.ref(i)
			if m, ok := s.watches.Cached(ref); ok {
				if o, err := rr.object(i); err == nil && drift.Untouched(o, m, app) {
					continue
				}
			}
			refs = append(refs, ref)
		}
	}
	if len(refs) > 0 {
		s.listener.CheckAll(app, refs)
	}
}

// Backstop asks the listener to compare the watch cache with what the last checks saw
// for the Application's objects (no API request); it returns the number of objects
// marked for a check.
func (s *Store) Backstop(app types.NamespacedName) int {
	if s.listener == nil {
		return 0
	}
	return s.listener.Backstop(app, s.Refs(app))
}

// RequestSync asks the Application controller for a full sync of app (the drift checks
// found no desired state in memory: a restart).
func (s *Store) RequestSync(app types.NamespacedName) {
	s.syncs <- event.GenericEvent{Object: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}}
}

// SyncRequests is what RequestSync sends, for the Application controller's queue.
func (s *Store) SyncRequests() <-chan event.GenericEvent { return s.syncs }

// kinds returns the kinds to watch: those of some Application's desired objects or of a
// sync under way.
func (s *Store) kinds() map[schema.GroupVersionKind]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make(map[schema.GroupVersionKind]bool, len(s.kindUsers))
	for gvk := range s.kindUsers {
		kinds[gvk] = true
	}
	return kinds
}

func (s *Store) syncWatches(ctx context.Context) error {
	if s.watches == nil {
		return nil
	}
	return s.watches.Sync(ctx, s.kinds())
}

// setKinds makes kinds (each kind once, never changed after) the Application's entry of
// byApp (desiredKinds or prepared; nil removes it) and keeps kindUsers, the number of
// entries naming each kind, in step.
// The caller holds s.mu.
func (s *Store) setKinds(byApp map[types.NamespacedName][]schema.GroupVersionKind, app types.NamespacedName, kinds []schema.GroupVersionKind) {
	for _, gvk := range byApp[app] {
		if s.kindUsers[gvk]--; s.kindUsers[gvk] <= 0 {
			delete(s.kindUsers, gvk)
		}
	}
	delete(byApp, app)
	if kinds == nil {
		return
	}
	byApp[app] = kinds
	for _, gvk := range kinds {
		s.kindUsers[gvk]++
	}
}
