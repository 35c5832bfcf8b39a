package applicationset

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// appliedRecord is what the controller last applied to one Application and the
// generation that apply left: while both hold (and the labels it set are there), the
// apply is skipped, so that the status changes of a hundred Applications do not cost a
// hundred applies each.
type appliedRecord struct {
	hash       [32]byte
	generation int64
}

// applyAll server-side applies the generated Applications with the set's own field
// manager, forcing ownership: a hand edit of a field the template sets is reverted.
func (r *Reconciler) applyAll(ctx context.Context, set *gitsyncv1.ApplicationSet, apps []*gitsyncv1.Application, live []gitsyncv1.Application) error {
	byName := map[string]*gitsyncv1.Application{}
	for i := range live {
		byName[live[i].Name] = &live[i]
	}
	for _, a := range apps {
		u, err := toApply(a)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("encoding Application %s: %w", a.Name, err)
		}
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
		rec := appliedRecord{hash: sha256.Sum256(raw)}
		if l := byName[a.Name]; l != nil && r.unchanged(key, rec.hash, a, l) {
			continue
		} else if l == nil {
			if err := r.refuseForeign(ctx, set, key); err != nil {
				return err
			}
		}
		if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(gitsyncv1.ApplicationSetFieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying Application %s: %w", a.Name, err)
		}
		rec.generation = u.GetGeneration()
		r.applied.Store(key, rec)
		appliesTotal.Inc()
	}
	return nil
}

// refuseForeign refuses to take over an Application of that name that exists and is not
// this set's (made by hand, or by another set).
func (r *Reconciler) refuseForeign(ctx context.Context, set *gitsyncv1.ApplicationSet, key types.NamespacedName) error {
	existing := &gitsyncv1.Application{}
	err := r.APIReader.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Application %s: %w", key.Name, err)
	}
	if !metav1.IsControlledBy(existing, set) {
		return fmt.Errorf("Application %s exists and is not this ApplicationSet's: rename the template's name or delete it", key.Name)
	}
	return nil
}

// unchanged tells whether live is still what the last apply of the same content left.
func (r *Reconciler) unchanged(key types.NamespacedName, hash [32]byte, want, live *gitsyncv1.Application) bool {
	v, ok := r.applied.Load(key)
	if !ok {
		return false
	}
	rec := v.(appliedRecord)
	if rec.hash != hash || rec.generation != live.Generation {
		return false
	}
	for k, v := range want.Labels {
		if live.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if live.Annotations[k] != v {
			return false
		}
	}
	return metav1.IsControlledBy(live, &metav1.ObjectMeta{UID: want.OwnerReferences[0].UID})
}

// toApply is the apply configuration of a: no status, no server-set metadata.
func toApply(a *gitsyncv1.Application) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return nil, fmt.Errorf("converting Application %s: %w", a.Name, err)
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// prune deletes the set's Applications that no parameter set makes any more (or
// orphans them, with preserveOnDeletion). Only Applications this set controls (owner
// reference with its UID) are touched: the label alone proves nothing.
func (r *Reconciler) prune(ctx context.Context, set *gitsyncv1.ApplicationSet, apps []*gitsyncv1.Application, live []gitsyncv1.Application) error {
	want := map[string]bool{}
	for _, a := range apps {
		want[a.Name] = true
	}
	for i := range live {
		l := &live[i]
		if want[l.Name] || !metav1.IsControlledBy(l, set) {
			continue
		}
		if set.Spec.PreserveOnDeletion {
			if err := r.orphan(ctx, set, l); err != nil {
				return err
			}
			continue
		}
		if err := r.Delete(ctx, l, client.Preconditions{UID: &l.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Application %s: %w", l.Name, err)
		}
		r.applied.Delete(client.ObjectKeyFromObject(l))
		deletesTotal.Inc()
	}
	return nil
}

// orphan removes the set's owner reference and label from app (it stays as it is).
func (r *Reconciler) orphan(ctx context.Context, set *gitsyncv1.ApplicationSet, app *gitsyncv1.Application) error {
	if !metav1.IsControlledBy(app, set) && app.Labels[gitsyncv1.ApplicationSetLabel] != set.Name {
		return nil
	}
	base := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	var refs []metav1.OwnerReference
	for _, ref := range app.OwnerReferences {
		if ref.UID != set.UID {
			refs = append(refs, ref)
		}
	}
	app.OwnerReferences = refs
	delete(app.Labels, gitsyncv1.ApplicationSetLabel)
	if err := r.Patch(ctx, app, base); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("orphaning Application %s: %w", app.Name, err)
	}
	// The fields the set's manager owned stay with it; a later set of the same name
	// would take the Application back only through its label, which is gone.
	r.applied.Delete(client.ObjectKeyFromObject(app))
	return nil
}
