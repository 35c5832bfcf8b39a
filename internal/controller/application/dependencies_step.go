package application

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// reconcileDependencies waits until every Application in spec.dependsOn is Ready for its
// current generation. Sets Ready=False/DependencyNotReady while one is not.
func (r *Reconciler) reconcileDependencies(ctx context.Context, s *syncRun) outcome {
	for _, dep := range s.app.Spec.DependsOn {
		key := types.NamespacedName{Namespace: dep.Namespace, Name: dep.Name}
		if key.Namespace == "" {
			key.Namespace = s.app.Namespace
		}
		other := &gitsyncv1.Application{}
		err := r.Get(ctx, key, other)
		ready := err == nil && conditions.IsReady(other) && other.Status.ObservedGeneration == other.Generation
		if !ready {
			msg := fmt.Sprintf("dependency %s is not ready", key)
			if err != nil {
				msg = fmt.Sprintf("dependency %s: %v", key, client.IgnoreNotFound(err))
				if apierrors.IsNotFound(err) {
					msg = fmt.Sprintf("dependency %s does not exist", key)
				}
			}
			return waitFor(r.retryInterval(), gitsyncv1.DependencyNotReadyReason, msg)
		}
	}
	return done()
}
