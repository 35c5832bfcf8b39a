package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// PruneOptions tune a Prune.
type PruneOptions struct {
	// Claimed, when set, says whether another Application wants the object of an
	// inventory ID now (its Git renders it): such an object is not deleted but left,
	// with this owner's labels, for the other Application to take over (see
	// Options.OwnerReleased), so moving an object between Applications in one commit
	// never deletes it, whichever of the two syncs first.
	Claimed func(ctx context.Context, id string) (bool, error)
	// CRDs lets the prune delete a CustomResourceDefinition that still has custom
	// resources (spec.pruneCRDs). Without it such a CRD is kept, in a *RefusedError.
	CRDs bool
	// NamespacedKinds, when set, lists the kinds that live in namespaces and can be
	// listed (from discovery). A stale Namespace is then deleted only when it holds
	// nothing but this owner's objects, objects owned by others (ownerReferences), and
	// what the cluster puts in every namespace; otherwise, or when that cannot be told,
	// it is orphaned: left in place and reported as a Change with OrphanedAction.
	NamespacedKinds func(context.Context) ([]schema.GroupVersionKind, error)
}

// Prune deletes the stale entries (see Stale) that still carry this Manager's owner
// labels, with background propagation, in reverse apply order (the order Stale
// returns; Prune sorts them again, so any order is fine). Objects that no longer
// exist, whose labels name another owner or no owner, whose prune is disabled by an
// annotation (see PruneDisabled) or that another Application claims (PruneOptions)
// are skipped and never deleted; a CRD that still has custom resources is refused
// unless PruneOptions.CRDs, and a Namespace that holds others' objects is orphaned (see
// PruneOptions). It returns the deleted objects as Changes with Action
// "deleted"; on errors it goes on with the other entries and returns them all together.
func (m *Manager) Prune(ctx context.Context, stale []Entry, options ...PruneOptions) ([]Change, error) {
	var popts PruneOptions
	if len(options) > 0 {
		popts = options[0]
	}
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
		if owner, ok := OwnerOf(existing.GetLabels()); !ok || owner != m.owner {
			continue // ssa's Delete would skip it too
		}
		if PruneDisabled(existing.GetAnnotations()) {
			log.FromContext(ctx).V(1).Info("not pruning: prune disabled by annotation", "object", e.Subject())
			continue
		}
		if popts.Claimed != nil {
			claimed, err := popts.Claimed(ctx, e.ID)
			if err != nil {
				errs = append(errs, fmt.Errorf("pruning %s: checking other Applications: %w", e.Subject(), err))
				continue
			}
			if claimed {
				log.FromContext(ctx).V(1).Info("not pruning: another Application takes it over", "object", e.Subject())
				continue
			}
		}
		if isCRD(obj) && !popts.CRDs {
			if err := m.crdInUse(ctx, obj, e.Subject()); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if keep, why := m.keepNamespace(ctx, obj, popts.NamespacedKinds); keep {
			log.FromContext(ctx).Info("not pruning a Namespace: orphaned", "object", e.Subject(), "reason", why)
			changes = append(changes, Change{Entry: e, Subject: e.Subject(), Action: OrphanedAction, Message: why})
			continue
		}
		// ssa reads the object again and deletes it only when it has the inclusions.
		cse, err := m.ssa.Delete(ctx, obj, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("pruning: %w", err))
			continue
		}
		if cse.Action == ssa.DeletedAction {
			changes = append(changes, Change{Entry: e, Subject: cse.Subject, Action: Action(cse.Action.String())})
		}
	}
	return changes, errors.Join(errs...)
}

// Annotations of Flux and Argo CD that turn pruning off, honoured like gitsync's own.
const (
	fluxPruneAnnotation   = "kustomize.toolkit.fluxcd.io/prune"
	argoSyncOptions       = "argocd.argoproj.io/sync-options"
	argoPruneFalseOption  = "Prune=false"
	argoSyncOptionsSplits = ","
)

// PruneDisabled says whether annotations keep an object from being pruned or deleted
// with its Application: gitsync.dev/prune: disabled, Flux's
// kustomize.toolkit.fluxcd.io/prune: disabled, or Prune=false among Argo CD's
// argocd.argoproj.io/sync-options.
func PruneDisabled(annotations map[string]string) bool {
	if annotations[gitsyncv1.PruneAnnotation] == gitsyncv1.PruneDisabled ||
		annotations[fluxPruneAnnotation] == gitsyncv1.PruneDisabled {
		return true
	}
	for _, opt := range strings.Split(annotations[argoSyncOptions], argoSyncOptionsSplits) {
		if strings.TrimSpace(opt) == argoPruneFalseOption {
			return true
		}
	}
	return false
}
