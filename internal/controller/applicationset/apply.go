package applicationset

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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

// applyConcurrency is how many generated Applications are applied at once.
const applyConcurrency = 8

// applyAll server-side applies the generated Applications with the set's own field
// manager, forcing ownership: a hand edit of a field the template sets is reverted. An
// Application whose content and generation are as the last apply left them is skipped.
func (r *Reconciler) applyAll(ctx context.Context, set *gitsyncv1.ApplicationSet, apps []*gitsyncv1.Application, live []gitsyncv1.Application) error {
	byName := map[string]*gitsyncv1.Application{}
	for i := range live {
		byName[live[i].Name] = &live[i]
	}
	type job struct {
		u    *unstructured.Unstructured
		key  types.NamespacedName
		rec  appliedRecord
		sent map[string]bool
	}
	var jobs []job
	fresh := false
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
		l := byName[a.Name]
		if l != nil && r.unchanged(key, rec.hash, a, l) {
			continue
		}
		fresh = fresh || l == nil
		sent := map[string]bool{}
		if spec, ok := u.Object["spec"].(map[string]any); ok {
			for k := range spec {
				sent[k] = true
			}
		}
		jobs = append(jobs, job{u: u, key: key, rec: rec, sent: sent})
	}
	if fresh {
		if err := r.refuseForeign(ctx, set, apps, byName); err != nil {
			return err
		}
	}
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, applyConcurrency)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(j.u),
				client.FieldOwner(gitsyncv1.ApplicationSetFieldManager), client.ForceOwnership); err != nil {
				errs[i] = fmt.Errorf("applying Application %s: %w", j.key.Name, err)
				return
			}
			if err := r.revertForeign(ctx, j.u, j.sent); err != nil {
				errs[i] = err
				return
			}
			j.rec.generation = j.u.GetGeneration()
			r.applied.Store(j.key, j.rec)
			appliesTotal.Inc()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// refuseForeign refuses to take over an Application of a generated name that exists and
// is not this set's (made by hand, or by another set): one metadata list of the
// namespace, read only when the set is about to create Applications.
func (r *Reconciler) refuseForeign(ctx context.Context, set *gitsyncv1.ApplicationSet, apps []*gitsyncv1.Application, ours map[string]*gitsyncv1.Application) error {
	all := &metav1.PartialObjectMetadataList{}
	all.SetGroupVersionKind(gitsyncv1.GroupVersion.WithKind("ApplicationList"))
	if err := r.APIReader.List(ctx, all, client.InNamespace(set.Namespace)); err != nil {
		return fmt.Errorf("listing the namespace's Applications: %w", err)
	}
	want := map[string]bool{}
	for _, a := range apps {
		if ours[a.Name] == nil {
			want[a.Name] = true
		}
	}
	for i := range all.Items {
		existing := &all.Items[i]
		if want[existing.Name] && !metav1.IsControlledBy(existing, set) {
			return fmt.Errorf("Application %s exists and is not this ApplicationSet's: change the template's name or delete it", existing.Name)
		}
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

// revertForeign removes the spec fields of applied (the apply's answer) that another
// field manager set and the apply did not send (sent: its spec's keys): a hand edit of a
// field the template leaves out (a `kubectl edit` adding spec.suspend, say) is reverted,
// as one of a field it sets is by the forced apply. Defaults come back with the removal.
func (r *Reconciler) revertForeign(ctx context.Context, applied *unstructured.Unstructured, sent map[string]bool) error {
	foreign := map[string]any{}
	for _, mf := range applied.GetManagedFields() {
		if mf.Manager == gitsyncv1.ApplicationSetFieldManager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		spec, _ := fields["f:spec"].(map[string]any)
		for k := range spec {
			if name, ok := strings.CutPrefix(k, "f:"); ok && !sent[name] {
				foreign[name] = nil
			}
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": foreign})
	if err != nil {
		return err
	}
	if err := r.Patch(ctx, applied, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("reverting hand-set fields of Application %s: %w", applied.GetName(), err)
	}
	return nil
}
