package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prune deletes the stale entries (see Stale) that still carry this Manager's owner
// labels, with background propagation, in reverse apply order (the order Stale
// returns; Prune sorts them again, so any order is fine). Objects that no longer
// exist, or whose labels name another owner or no owner, are skipped and never
// deleted. It returns the deleted objects as Changes with Action "deleted"; on errors
// it goes on with the other entries and returns them all together.
func (m *Manager) Prune(ctx context.Context, stale []Entry) ([]Change, error) {
	opts := ssa.DefaultDeleteOptions()
	opts.Inclusions = m.owner.Labels()

	var (
		changes []Change
		errs    []error
	)
	for _, e := range Stale(stale, nil) {
		obj, err := e.object()
		if err != nil {
			errs = append(errs, fmt.Errorf("pruning: %w", err))
			continue
		}
		// ssa's Delete reports a missing object as deleted; it is not, so look first.
		existing := &metav1.PartialObjectMetadata{}
		existing.SetGroupVersionKind(obj.GroupVersionKind())
		err = m.client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("pruning %s: %w", e.Subject(), err))
			continue
		}
		// ssa reads the object again and deletes it only when it has the inclusions.
		cse, err := m.ssa.Delete(ctx, obj, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("pruning: %w", err))
			continue
		}
		if cse.Action == ssa.DeletedAction {
			changes = append(changes, Change{Entry: e, Subject: cse.Subject, Action: cse.Action.String()})
		}
	}
	return changes, errors.Join(errs...)
}
