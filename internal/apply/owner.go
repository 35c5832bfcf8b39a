package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Owner is the Application that manages objects.
type Owner struct {
	Name      string
	Namespace string
}

// Labels returns the labels that mark an object as managed by o.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		gitsyncv1.ApplicationLabel:          o.Name,
		gitsyncv1.ApplicationNamespaceLabel: o.Namespace,
	}
}

// String returns "namespace/name".
func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// OwnerOf returns the Owner named by an object's labels, and false when the object
// carries no owner label.
func OwnerOf(labels map[string]string) (Owner, bool) {
	name, ok := labels[gitsyncv1.ApplicationLabel]
	if !ok {
		return Owner{}, false
	}
	return Owner{Name: name, Namespace: labels[gitsyncv1.ApplicationNamespaceLabel]}, true
}

// setLabels sets o's labels on obj, replacing any owner labels it had.
func (o Owner) setLabels(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range o.Labels() {
		labels[k] = v
	}
	obj.SetLabels(labels)
}

// ConflictError says that an object of the set is already managed by another Application.
type ConflictError struct {
	// Subject is the object, "Kind/namespace/name".
	Subject string
	// Owner is the Application whose labels the object carries.
	Owner Owner
}

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is managed by Application %s", e.Subject, e.Owner)
}

// listThreshold is the number of new objects of one kind in one namespace from which
// checkOwners lists that kind's gitsync-labelled objects there instead of reading each.
const listThreshold = 4

// OwnerLookup reads the owner labels of an object from a watch cache that holds every
// object of its kind carrying an owner label. synced is false when the cache cannot
// tell (the kind is not watched, or its first list is not in); labelled is false when
// the cache holds no such object.
type OwnerLookup func(gvk schema.GroupVersionKind, namespace, name string) (owner Owner, labelled, synced bool)

// checkOwners looks at the objects whose IDs are not in known (the last inventory) and
// returns a *ConflictError, in apply order, for the first one labelled for another Owner
// that has not released it (see ReleasedFunc; nil: none has). Objects that do not exist
// yet (or whose kind does not exist yet) are fine. When lookup's cache holds an object's
// kind, it answers without a request: an object it names another owner of is then read
// (one GET) to confirm, through the Manager's client, so that an impersonated
// Application learns nothing its own rights do not show; the IDs of the objects it
// vouched for are returned (the cache lags the API server a little: the caller checks
// them again when it reads them). Other new objects are read one GET each, or, when
// there are listThreshold or more of one kind in one namespace, with one metadata LIST
// of that kind's objects carrying an owner label (a cold start of 20 ConfigMaps is one
// request, not 20).
func (m *Manager) checkOwners(ctx context.Context, objs []*unstructured.Unstructured, known map[string]bool, lookup OwnerLookup, released ReleasedFunc) (cached map[string]bool, err error) {
	type groupKey struct {
		gvk       schema.GroupVersionKind
		namespace string
	}
	groups := map[groupKey][]int{}
	var order []groupKey
	var confirm []int
	for i, obj := range objs {
		if known[EntryOf(obj).ID] {
			continue
		}
		if lookup != nil {
			owner, labelled, synced := lookup(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
			if synced {
				if labelled && owner != m.owner {
					confirm = append(confirm, i)
				} else {
					if cached == nil {
						cached = map[string]bool{}
					}
					cached[EntryOf(obj).ID] = true
				}
				continue
			}
		}
		k := groupKey{obj.GroupVersionKind(), obj.GetNamespace()}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}

	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, m.concurrency)
	run := func(f func()) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f()
		})
	}
	for _, i := range confirm {
		run(func() { errs[i] = m.checkOwner(ctx, objs[i], released) })
	}
	for _, k := range order {
		idx := groups[k]
		if len(idx) >= listThreshold {
			run(func() {
				owners, err := m.listOwners(ctx, k.gvk, k.namespace)
				if err != nil {
					// Not allowed to list (an impersonated account may only get):
					// read them one by one.
					for _, i := range idx {
						errs[i] = m.checkOwner(ctx, objs[i], released)
					}
					return
				}
				for _, i := range idx {
					if other, ok := owners[objs[i].GetName()]; ok {
						errs[i] = m.conflict(ctx, objs[i], other, released)
					}
				}
			})
			continue
		}
		for _, i := range idx {
			run(func() { errs[i] = m.checkOwner(ctx, objs[i], released) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return cached, nil
}

// listOwners returns the owners of the objects of one kind in one namespace that carry
// an owner label, by name. A kind that does not exist yet has none.
func (m *Manager) listOwners(ctx context.Context, gvk schema.GroupVersionKind, namespace string) (map[string]Owner, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.HasLabels{gitsyncv1.ApplicationLabel}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := m.client.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	owners := make(map[string]Owner, len(list.Items))
	for _, item := range list.Items {
		if o, ok := OwnerOf(item.GetLabels()); ok {
			owners[item.GetName()] = o
		}
	}
	return owners, nil
}

func (m *Manager) checkOwner(ctx context.Context, obj *unstructured.Unstructured, released ReleasedFunc) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("checking the owner of %s: %w", utils.FmtUnstructured(obj), err)
	}
	if other, ok := OwnerOf(existing.GetLabels()); ok {
		return m.conflict(ctx, obj, other, released)
	}
	return nil
}

// ReleasedFunc says whether the Application owner has let go of the object of an
// inventory ID: it no longer lists it in its inventory, no longer renders it, or no
// longer exists.
type ReleasedFunc func(ctx context.Context, owner types.NamespacedName, id string) (bool, error)

// conflict returns a *ConflictError when obj, labelled for other, may not be taken
// over: other is another Application and released (when set) does not say that it
// let go of obj.
func (m *Manager) conflict(ctx context.Context, obj *unstructured.Unstructured, other Owner, released ReleasedFunc) error {
	if other == m.owner {
		return nil
	}
	if released != nil {
		ok, err := released(ctx, types.NamespacedName{Namespace: other.Namespace, Name: other.Name}, EntryOf(obj).ID)
		if err != nil {
			return fmt.Errorf("checking whether Application %s released %s: %w", other, utils.FmtUnstructured(obj), err)
		}
		if ok {
			log.FromContext(ctx).Info("taking over an object released by another Application",
				"object", utils.FmtUnstructured(obj), "from", other.String())
			return nil
		}
	}
	return &ConflictError{Subject: utils.FmtUnstructured(obj), Owner: other}
}

// entryIDs is the set of the entries' IDs.
func entryIDs(entries []Entry) map[string]bool {
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		ids[e.ID] = true
	}
	return ids
}
