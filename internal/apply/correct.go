package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Compare reads one object as it is (live; nil when it does not exist) and as applying
// Git's version would make it (desired: a server-side dry-run apply with the owner
// labels). Two requests; nothing is written. Drift detection diffs the two.
func (m *Manager) Compare(ctx context.Context, obj *unstructured.Unstructured) (live, desired *unstructured.Unstructured, err error) {
	live = &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading %s: %w", Subject(obj), err)
		}
		live = nil
	}
	desired = obj.DeepCopy()
	m.owner.setLabels(desired)
	// The body Apply and Correct send (bodyOf), so that the comparison sees what they do.
	body, err := bodyOf(desired)
	if err != nil {
		return nil, nil, fmt.Errorf("server-side dry-run of %s: %w", Subject(obj), err)
	}
	if err := m.client.Patch(ctx, desired, client.RawPatch(types.ApplyPatchType, body), client.DryRunAll, client.ForceOwnership,
		client.FieldOwner(gitsyncv1.FieldManager)); err != nil {
		return nil, nil, fmt.Errorf("server-side dry-run of %s: %w", Subject(obj), err)
	}
	return live, desired, nil
}

// Correct applies Git's version of one object (server-side apply, field manager gitsync,
// taking back the fields others changed), recreating it if it was deleted: one request.
// The fields at ignore (JSON pointers, spec.ignoreDifferences) keep their live values,
// as in Apply (one more request, a GET, when there are any).
func (m *Manager) Correct(ctx context.Context, obj *unstructured.Unstructured, ignore ...string) error {
	o := obj.DeepCopy()
	m.owner.setLabels(o)
	if len(ignore) > 0 {
		if err := m.keepLive(ctx, o, ignore); err != nil {
			return err
		}
	}
	body, err := bodyOf(o)
	if err != nil {
		return fmt.Errorf("applying %s: %w", Subject(obj), err)
	}
	if _, err := m.applyObject(ctx, o, body); err != nil {
		return fmt.Errorf("applying %s: %w", Subject(obj), err)
	}
	return nil
}

// Subject names an object "Kind/namespace/name" (no namespace for cluster-scoped ones).
func Subject(obj *unstructured.Unstructured) string {
	return EntryOf(obj).Subject()
}
