package controller

import (
	"bytes"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// storedObject is one object of a desired state, kept small: its reference and its
// JSON (a decoded object takes several times the memory, for every managed object, while
// only the few that a drift check looks at are ever needed whole).
type storedObject struct {
	ref drift.ObjectRef
	raw []byte
}

func (d storedObject) object() (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(d.raw); err != nil {
		return nil, err
	}
	return obj, nil
}

// Unsure records that the Application's objects may differ from its desired state
// through no one else's doing (an apply under way or failed, a restart after a failed
// sync): Unchanged vouches for none of them until the next Applied.
func (r *DriftReconciler) Unsure(app types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unsure[app] = true
}

// Unchanged returns apply.Options.Unchanged for a sync of the Application, or nil when
// its recorded state vouches for nothing (none recorded, or Unsure). An object is
// unchanged when the new render of it equals the recorded desired object, no drift
// check of it is pending, reported or failing, and the watch cache shows it untouched
// since gitsync applied it (drift.Untouched): applying it again would change nothing.
func (r *DriftReconciler) Unchanged(app types.NamespacedName) func(*unstructured.Unstructured) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.desired[app]; !ok || r.unsure[app] {
		return nil
	}
	return func(obj *unstructured.Unstructured) bool {
		raw, err := obj.MarshalJSON()
		if err != nil {
			return false
		}
		ref := objectRef(obj)
		r.mu.Lock()
		d, ok := r.desired[app][refID(ref)]
		busy := r.pending[app][ref] || r.drifted[ref] || r.failures[ref] > 0
		r.mu.Unlock()
		if !ok || busy || !bytes.Equal(d.raw, raw) {
			return false
		}
		m, ok := r.Watches.Cached(ref)
		return ok && drift.Untouched(obj, m, app)
	}
}

// Desired returns the objects of the Application's last applied revision, as the drift
// controller compares them with the cluster (false when none is in memory: before its
// first sync, or after a restart until its revision is restored). The operator's web UI
// diffs these: no render and no Git fetch per request.
func (r *DriftReconciler) Desired(app types.NamespacedName) ([]*unstructured.Unstructured, bool) {
	r.mu.Lock()
	stored, ok := r.desired[app]
	objs := make([]*unstructured.Unstructured, 0, len(stored))
	for _, d := range stored {
		if obj, err := d.object(); err == nil {
			objs = append(objs, obj)
		}
	}
	r.mu.Unlock()
	sort.Slice(objs, func(i, j int) bool { return apply.Subject(objs[i]) < apply.Subject(objs[j]) })
	return objs, ok
}
