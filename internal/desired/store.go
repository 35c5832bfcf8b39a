// Package desired holds what was last applied per Application (its objects, kept small),
// the per-Application lock a sync and the drift checks share, and the kinds to watch: the
// only link between the sync and the drift controllers, neither of which holds the other.
package desired

import (
	"bytes"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// Listener is what watches the desired state for drift (the drift controller): the Store
// tells it what changed and forwards it the sync's requests for checks.
type Listener interface {
	// Applied says the objects are the Application's desired state now (their kinds are
	// watched): a sync applied every one of them.
	Applied(app types.NamespacedName, refs []drift.ObjectRef)
	// Forgotten says the Application's objects are no longer desired.
	Forgotten(app types.NamespacedName, refs []drift.ObjectRef)
	// Busy tells whether a drift check of the object is pending, reported or failing:
	// the sync must send it again rather than trust the recorded state.
	Busy(app types.NamespacedName, ref drift.ObjectRef) bool
	// CheckAll asks for a check of the given objects of the Application, at low
	// priority (after its desired state was restored).
	CheckAll(app types.NamespacedName, refs []drift.ObjectRef)
	// Backstop asks for a check of whatever the watch cache shows changed since the last
	// checks (no API request); it returns how many objects it marked.
	Backstop(app types.NamespacedName, refs []drift.ObjectRef) int
}

// Store is the desired state of every Application this replica syncs. Its zero value is
// not usable: call New.
type Store struct {
	mu      sync.Mutex
	objects map[types.NamespacedName]*recorded
	// desiredKinds holds the kinds of each Application's desired objects; kindUsers
	// counts, per kind, the entries of desiredKinds and prepared that name it (see
	// setKinds), so that the kinds to watch are known without going over every object.
	desiredKinds map[types.NamespacedName][]schema.GroupVersionKind
	kindUsers    map[schema.GroupVersionKind]int
	// prepared holds the kinds of a sync under way, watched from before its apply until
	// its Applied (or Forget), so that other Applications' syncs do not stop them.
	prepared map[types.NamespacedName][]schema.GroupVersionKind
	// unsure holds the Applications whose objects may differ from desired (see Unsure).
	unsure map[types.NamespacedName]bool
	// locks serialize, per Application, drift checks with the apply of a sync (Lock).
	locks map[types.NamespacedName]*sync.Mutex

	watches  *drift.Watches
	listener Listener
	// syncs carries the full syncs asked for (RequestSync) to the Application controller.
	syncs chan event.GenericEvent
}

// New returns an empty Store; Attach gives it its watches.
func New() *Store {
	return &Store{
		objects:      map[types.NamespacedName]*recorded{},
		desiredKinds: map[types.NamespacedName][]schema.GroupVersionKind{},
		kindUsers:    map[schema.GroupVersionKind]int{},
		prepared:     map[types.NamespacedName][]schema.GroupVersionKind{},
		unsure:       map[types.NamespacedName]bool{},
		locks:        map[types.NamespacedName]*sync.Mutex{},
		syncs:        make(chan event.GenericEvent, 1024),
	}
}

// Attach gives the Store the watches of the managed objects' kinds and the listener of
// its changes (the drift controller's setup calls it, before the manager starts). Without
// it the Store records desired states but watches nothing and vouches for nothing.
func (s *Store) Attach(w *drift.Watches, l Listener) {
	s.watches, s.listener = w, l
}

// Lock takes the Application's lock and returns its release: a sync holds it from before
// its apply until Applied has recorded the new desired state, a drift check around its
// comparisons and corrections.
func (s *Store) Lock(app types.NamespacedName) (unlock func()) {
	l := s.lockOf(app)
	l.Lock()
	return l.Unlock
}

// TryLock takes the Application's lock if it is free (a drift check does not hold a
// worker while a sync applies).
func (s *Store) TryLock(app types.NamespacedName) (unlock func(), ok bool) {
	l := s.lockOf(app)
	if !l.TryLock() {
		return nil, false
	}
	return l.Unlock, true
}

func (s *Store) lockOf(app types.NamespacedName) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[app]
	if !ok {
		l = &sync.Mutex{}
		s.locks[app] = l
	}
	return l
}

// Tracked tells whether the Application's desired state is in memory.
func (s *Store) Tracked(app types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objects[app]
	return ok
}

// Unsure records that the Application's objects may differ from its desired state
// through no one else's doing (an apply under way or failed, a restart after a failed
// sync): Unchanged vouches for none of them until the next Applied.
func (s *Store) Unsure(app types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsure[app] = true
}

// Unchanged returns apply.Options.Unchanged for a sync of the Application, or nil when
// its recorded state vouches for nothing (none recorded, Unsure, or nothing watched). An
// object is unchanged when the new render of it equals the recorded desired object, no
// drift check of it is pending, reported or failing (Listener.Busy), and the watch cache
// shows it untouched since gitsync applied it (drift.Untouched): applying it again would
// change nothing.
func (s *Store) Unchanged(app types.NamespacedName) func(*unstructured.Unstructured) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[app]; !ok || s.unsure[app] || s.watches == nil {
		return nil
	}
	// The sync asks about each of its objects: each chunk of the recorded state is
	// expanded once.
	var mu sync.Mutex
	var rr *recordReader
	return func(obj *unstructured.Unstructured) bool {
		raw, err := obj.MarshalJSON()
		if err != nil {
			return false
		}
		ref := drift.RefOf(obj)
		s.mu.Lock()
		rec := s.objects[app]
		s.mu.Unlock()
		i, ok := rec.find(ref)
		if !ok {
			return false
		}
		mu.Lock()
		if rr == nil || rr.rec != rec {
			rr = rec.reader()
		}
		recorded, err := rr.raw(i)
		mu.Unlock()
		if err != nil || !bytes.Equal(recorded, raw) || (s.listener != nil && s.listener.Busy(app, ref)) {
			return false
		}
		m, ok := s.watches.Cached(ref)
		return ok && drift.Untouched(obj, m, app)
	}
}

// Objects returns the objects of the Application's last applied revision, as the drift
// checks compare them with the cluster (false when none is in memory: before its first
// sync, or after a restart until its revision is restored). The operator's web UI diffs
// these: no render and no Git fetch per request.
func (s *Store) Objects(app types.NamespacedName) ([]*unstructured.Unstructured, bool) {
	s.mu.Lock()
	rec, ok := s.objects[app]
	s.mu.Unlock()
	var objs []*unstructured.Unstructured
	if rec != nil {
		rr := rec.reader()
		objs = make([]*unstructured.Unstructured, 0, len(rec.refs))
		for i := range rec.refs {
			if obj, err := rr.object(i); err == nil {
				objs = append(objs, obj)
			}
		}
	}
	sort.Slice(objs, func(i, j int) bool { return apply.Subject(objs[i]) < apply.Subject(objs[j]) })
	return objs, ok
}

// Object returns the desired object of ref (nil when the Application's desired state no
// longer holds it) and whether the Application's desired state is in memory at all.
func (s *Store) Object(app types.NamespacedName, ref drift.ObjectRef) (*unstructured.Unstructured, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, tracked := s.objects[app]
	if !tracked {
		return nil, false
	}
	i, ok := objs.find(ref)
	if !ok {
		return nil, true
	}
	obj, err := objs.reader().object(i)
	if err != nil {
		return nil, true // recorded from a valid object: cannot happen
	}
	return obj, true
}

// Refs returns the references of the Application's desired objects.
func (s *Store) Refs(app types.NamespacedName) []drift.ObjectRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec := s.objects[app]; rec != nil {
		return rec.objectRefs()
	}
	return []drift.ObjectRef{}
}

// Owners is the apply.OwnerLookup of the watches: they hold the metadata of every object
// of the watched kinds that carries an owner label, so the owner check of a sync's new
// objects makes no request unless one is labelled for another Application.
func (s *Store) Owners(gvk schema.GroupVersionKind, namespace, name string) (apply.Owner, bool, bool) {
	if s.watches == nil {
		return apply.Owner{}, false, false
	}
	m, synced := s.watches.Lookup(drift.ObjectRef{GVK: gvk, Namespace: namespace, Name: name})
	if m == nil {
		return apply.Owner{}, false, synced
	}
	owner, labelled := apply.OwnerOf(m.GetLabels())
	return owner, labelled, synced
}
