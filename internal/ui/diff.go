package ui

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// DesiredDiffer diffs what the operator last applied (desired: the drift controller's
// record, by Application) with the cluster: no render and no Git fetch per request. An
// Application whose revision the operator does not hold yet has no diff to show.
func DesiredDiffer(desired func(types.NamespacedName) ([]*unstructured.Unstructured, bool)) Differ {
	return func(ctx context.Context, _ *rest.Config, c client.Client, app *gitsyncv1.Application, want func(string) bool) ([]ObjectDiff, error) {
		objs, ok := desired(client.ObjectKeyFromObject(app))
		if !ok {
			return nil, fmt.Errorf("the operator holds no applied revision of %s/%s yet", app.Namespace, app.Name)
		}
		return operations.ObjectDiffs(ctx, c, app, objs, want)
	}
}
