package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitServed looks again at a kind that is not mapped yet (and, when it cannot watch, at a
// CRD that is not Established yet) after servedFirstDelay, doubling up to servedMaxDelay.
const (
	servedFirstDelay = 5 * time.Millisecond
	servedMaxDelay   = 100 * time.Millisecond
)

// servedKinds returns the kinds (one per served version) that the CRDs among objs define.
func servedKinds(objs []*unstructured.Unstructured) map[string][]schema.GroupVersionKind {
	kinds := map[string][]schema.GroupVersionKind{}
	for _, o := range objs {
		if !utils.IsCRD(o) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			version, ok := v.(map[string]any)
			if !ok || version["served"] != true {
				continue
			}
			name, _ := version["name"].(string)
			kinds[o.GetName()] = append(kinds[o.GetName()], schema.GroupVersionKind{Group: group, Version: name, Kind: kind})
		}
	}
	return kinds
}

// waitServed waits until every CRD among objs is Established and the client's RESTMapper
// maps each kind and served version it defines. A CRD is Established before discovery
// serves its group, and a RESTMapper may have cached discovery from before the CRD
// existed: without this wait, the next dry-run or apply of a custom resource of the
// same set fails with `no matches for kind`. Establishment is awaited with a watch of
// each CRD when the reader can watch (else read again with pollBackoff); the mapping is
// then looked at with pollBackoff. A mapper that can be reset (meta.ResettableRESTMapper,
// e.g. a memory-cached discovery mapper) is reset while a kind is missing;
// controller-runtime's dynamic mapper looks a missing group up again by itself.
func (m *Manager) waitServed(ctx context.Context, objs []*unstructured.Unstructured) error {
	kinds := servedKinds(objs)
	if len(kinds) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, stageWaitTimeout)
	defer cancel()
	for name := range kinds {
		if err := m.awaitEstablished(ctx, name); err != nil {
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be Established: %w", name, err)
		}
	}
	mapper := m.client.RESTMapper()
	var missing string
	err := pollBackoff(ctx, stageWaitTimeout, func(ctx context.Context) (bool, error) {
		for name, gvks := range kinds {
			for _, gvk := range gvks {
				_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if meta.IsNoMatchError(err) {
					if r, ok := mapper.(meta.ResettableRESTMapper); ok {
						r.Reset()
					}
					missing = fmt.Sprintf("kind %s to be served", gvk)
					return false, nil
				}
				if err != nil {
					return false, fmt.Errorf("mapping kind %s: %w", gvk, err)
				}
			}
			delete(kinds, name)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", missing, err)
	}
	return nil
}

// awaitEstablished returns when the CRD named name is Established: told by a watch of it
// (whose first event is its state now) when the reader can watch and may, else by reading
// it again with pollBackoff.
func (m *Manager) awaitEstablished(ctx context.Context, name string) error {
	if w, ok := m.reader.(client.WithWatch); ok {
		done, err := watchEstablished(ctx, w, name)
		if done || err != nil {
			return err
		}
	}
	return pollBackoff(ctx, stageWaitTimeout, func(ctx context.Context) (bool, error) {
		return m.established(ctx, name)
	})
}

// watchEstablished watches the CRD named name until it is Established (true), the watch
// cannot be had (false, nil: the caller reads instead, e.g. an identity that may get
// CRDs but not watch them), or ctx ends.
func watchEstablished(ctx context.Context, w client.WithWatch, name string) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(crdGVK.GroupVersion().WithKind("CustomResourceDefinitionList"))
	wi, err := w.Watch(ctx, list, client.MatchingFields{"metadata.name": name})
	if err != nil {
		return false, nil
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, open := <-wi.ResultChan():
			if !open {
				return false, nil // ended by the server: read instead
			}
			if crd, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Deleted && isEstablished(crd) {
				return true, nil
			}
		}
	}
}

// pollBackoff calls done at once, then after servedFirstDelay, doubling up to
// servedMaxDelay, until it says so, fails, or timeout passes.
func pollBackoff(ctx context.Context, timeout time.Duration, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := servedFirstDelay
	for {
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, servedMaxDelay)
	}
}

// crdGVK is the kind of a CustomResourceDefinition.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// established reads the Established condition of the CRD named name.
func (m *Manager) established(ctx context.Context, name string) (bool, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := m.reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
	}
	return isEstablished(crd), nil
}

// isEstablished says whether crd's Established condition is True.
func isEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		cond, ok := c.(map[string]any)
		if ok && cond["type"] == "Established" {
			return cond["status"] == "True"
		}
	}
	return false
}
