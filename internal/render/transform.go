package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/build"
	"github.com/gitsync-dev/gitsync/internal/transform"
)

// transformStep applies spec.patches, spec.images and spec.commonMetadata to objs (of
// any render, a chart's too: Helm post-rendering without a binary). kustomize's filters
// read the OpenAPI schema kustomize builds set, so it runs apart from them.
func transformStep(app *gitsyncv1.Application, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	opts := transform.Options{Patches: app.Spec.Patches, Images: app.Spec.Images, CommonMetadata: app.Spec.CommonMetadata}
	if opts.Empty() {
		return objs, nil
	}
	var out []*unstructured.Unstructured
	err := build.Exclusive(func() error {
		var err error
		out, err = transform.Apply(objs, opts)
		return err
	})
	return out, err
}
