package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/build"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/phase"
)

// Render builds app's objects from dir (a checkout root, or any directory the build is
// confined to) at path the way a sync does: a Helm chart when path holds a Chart.yaml
// (offline: Helm's default capabilities, no lookup, no valuesFrom), kustomize or plain
// YAML otherwise; then namespaced objects without a namespace go to
// spec.targetNamespace or the Application's namespace. isNamespaced tells the scope of
// kinds the set does not define itself. The CLI's diff and build use it so that they
// render what the next sync would apply (hooks included: see MainSet).
func Render(dir, path string, app *gitsyncv1.Application, isNamespaced func(schema.GroupKind) (bool, error)) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	var err error
	if chartDir := filepath.Join(dir, path); helm.IsChart(chartDir) {
		objs, _, err = renderChartWith(context.Background(), app, dirChart(dir, chartDir), chartDeps{})
	} else {
		objs, err = build.Build(dir, path)
	}
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

// MainSet returns the objects a sync applies and keeps in its inventory: the render
// without its hooks and skipped objects.
func MainSet(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	plan, err := phase.New(objs)
	if err != nil {
		return nil, err
	}
	return plan.Objects(), nil
}

// RenderChart renders app's chart from its HelmRepository the way a sync would, outside
// the operator: the index is read (or, for oci://, the chart's tags listed) and the chart
// version that spec.helm.version selects is downloaded into a temporary cache, with the
// repository's Secret read through c. Offline like Render (no lookup, no valuesFrom).
// It returns the objects and the revision (<chart>@<version>).
func RenderChart(ctx context.Context, c client.Reader, app *gitsyncv1.Application, isNamespaced func(schema.GroupKind) (bool, error)) ([]*unstructured.Unstructured, string, error) {
	key := sourceKey(app)
	repo := &gitsyncv1.HelmRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, "", fmt.Errorf("reading source HelmRepository %s: %w", key, err)
	}
	if app.Spec.Helm == nil || app.Spec.Helm.Chart == "" {
		return nil, "", fmt.Errorf("spec.helm.chart is required with a HelmRepository source")
	}
	tmp, err := os.MkdirTemp("", "gitsync-charts-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	store, err := chartrepo.New(tmp)
	if err != nil {
		return nil, "", err
	}
	digest, src, err := readIndex(ctx, store, c, repo, app.Spec.Helm.Chart)
	if err != nil {
		return nil, "", fmt.Errorf("reading HelmRepository %s: %w", key, err)
	}
	cv, err := store.Resolve(digest, app.Spec.Helm.Chart, app.Spec.Helm.Version)
	if err != nil {
		return nil, "", fmt.Errorf("HelmRepository %s: %w", key, err)
	}
	revision := chartRevision(cv.Name, cv.Version)
	path, _, err := store.Fetch(ctx, src, cv)
	if err != nil {
		return nil, revision, fmt.Errorf("pulling chart %s: %w", revision, err)
	}
	objs, _, err := renderChartWith(ctx, app, archiveChart(path), chartDeps{})
	if err == nil {
		err = build.SetDefaultNamespace(objs, DefaultNamespace(app), isNamespaced)
	}
	if err != nil {
		return nil, revision, fmt.Errorf("rendering chart %s: %w", revision, err)
	}
	return objs, revision, nil
}
