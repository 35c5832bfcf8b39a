package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/build"
)

// Render builds app's objects from dir (a checkout root, or any directory the build is
// confined to) at path the way a sync does: build.Build, then namespaced objects without
// a namespace go to spec.targetNamespace or the Application's namespace. isNamespaced
// tells the scope of kinds the set does not define itself. The CLI's diff and build use
// it so that they render exactly what the next sync would apply.
func Render(dir, path string, app *gitsyncv1.Application, isNamespaced func(schema.GroupKind) (bool, error)) ([]*unstructured.Unstructured, error) {
	objs, err := build.Build(dir, path)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", path, err)
	}
	if err := build.SetDefaultNamespace(objs, DefaultNamespace(app), isNamespaced); err != nil {
		return nil, fmt.Errorf("building %s: %w", path, err)
	}
	return objs, nil
}

// DefaultNamespace is where namespaced objects without a namespace in Git land.
func DefaultNamespace(app *gitsyncv1.Application) string {
	if app.Spec.TargetNamespace != "" {
		return app.Spec.TargetNamespace
	}
	return app.Namespace
}

// IgnorePointers returns the JSON pointers of app's spec.ignoreDifferences that apply to
// obj, as the drift detector uses them.
func IgnorePointers(app *gitsyncv1.Application, obj *unstructured.Unstructured) []string {
	return ignorePointers(app, obj)
}
