package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// withoutExisting returns objs without the objects createOnly names that exist already
// (one metadata GET each); objs is returned as is when createOnly is nil or names none.
func (m *Manager) withoutExisting(ctx context.Context, objs []*unstructured.Unstructured, createOnly func(*unstructured.Unstructured) bool) ([]*unstructured.Unstructured, error) {
	if createOnly == nil {
		return objs, nil
	}
	var out []*unstructured.Unstructured
	for i, o := range objs {
		if !createOnly(o) {
			if out != nil {
				out = append(out, o)
			}
			continue
		}
		existing := &metav1.PartialObjectMetadata{}
		existing.SetGroupVersionKind(o.GroupVersionKind())
		err := m.client.Get(ctx, client.ObjectKeyFromObject(o), existing)
		switch {
		case apierrors.IsNotFound(err):
			if out != nil {
				out = append(out, o)
			}
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", Subject(o), err)
		default: // exists: never updated
			if out == nil {
				out = append(make([]*unstructured.Unstructured, 0, len(objs)), objs[:i]...)
			}
		}
	}
	if out == nil {
		return objs, nil
	}
	return out, nil
}
