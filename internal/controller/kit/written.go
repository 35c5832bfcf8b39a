package kit

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// WrittenVersions remembers, per Application, the resourceVersion of the status the
// reconciler wrote last. An event queued during a sync starts the next reconcile as soon
// as that sync ends, often before the cache has the status it wrote: from that stale
// copy the reconcile would take the sync for undone, run it again, and its status patch
// would put the stale history back. Such a reconcile reads the Application from the API
// server instead (one GET, only then).
type WrittenVersions struct{ m sync.Map }

// remember records rv as the last version written for key.
func (w *WrittenVersions) Remember(key types.NamespacedName, rv string) { w.m.Store(key, rv) }

// forget drops key (the Application is gone).
func (w *WrittenVersions) Forget(key types.NamespacedName) { w.m.Delete(key) }

// stale tells whether cached, the cache's resourceVersion of key, is older than the
// last one written. Versions that are not numbers (the API server makes no promise)
// are never called stale; once the cache has caught up, key is forgotten.
func (w *WrittenVersions) Stale(key types.NamespacedName, cached string) bool {
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	written, err1 := strconv.ParseUint(v.(string), 10, 64)
	have, err2 := strconv.ParseUint(cached, 10, 64)
	if err1 != nil || err2 != nil || have >= written {
		w.m.CompareAndDelete(key, v)
		return false
	}
	return true
}
