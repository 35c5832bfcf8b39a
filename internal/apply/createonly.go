package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Existing returns the IDs of the objects of objs that pick selects and that exist in the
// cluster (one metadata GET each, through the Manager's client): for objects that are
// created when missing and never updated (a chart's crds/ under spec.helm.crds Create,
// as helm install treats them), which a sync then leaves out of its apply.
func (m *Manager) Existing(ctx context.Context, objs []*unstructured.Unstructured, pick func(*unstructured.Unstructured) bool) (map[string]bool, error) {
	existing := map[string]bool{}
	for _, o := range objs {
		if !pick(o) {
			continue
		}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(o.GroupVersionKind())
		err := m.client.Get(ctx, client.ObjectKeyFromObject(o), meta)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", Subject(o), err)
		default:
			existing[EntryOf(o).ID] = true
		}
	}
	return existing, nil
}
