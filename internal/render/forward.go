package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// The functions below forward to where source identity (internal/sourceid) and the
// Application's spec rules (api/v1beta1 rules.go) live now, for the callers not moved
// yet; `go fix` inlines them. New code calls sourceid and the accessors directly.

// SourceKey is sourceid.Key.
//
//go:fix inline
func SourceKey(app *gitsyncv1.Application) types.NamespacedName { return sourceid.Key(app) }

// GitRequest is sourceid.GitRequest.
//
//go:fix inline
func GitRequest(ctx context.Context, reader client.Reader, repo *gitsyncv1.GitRepository, ref source.Ref) (source.Request, error) {
	return sourceid.GitRequest(ctx, reader, repo, ref)
}

// RepositoryKey is sourceid.RepositoryKey.
//
//go:fix inline
func RepositoryKey(repo *gitsyncv1.GitRepository) string { return sourceid.RepositoryKey(repo) }

// IgnoreLines is sourceid.IgnoreLines.
//
//go:fix inline
func IgnoreLines(ignore string) []string { return sourceid.IgnoreLines(ignore) }

// LocateChart is sourceid.LocateChart.
//
//go:fix inline
func LocateChart(ctx context.Context, reader client.Reader, app *gitsyncv1.Application, store *chartrepo.Store) (string, string, error) {
	return sourceid.LocateChart(ctx, reader, app, store)
}

// RefusesEmpty is app.RefusesEmpty.
//
//go:fix inline
func RefusesEmpty(app *gitsyncv1.Application, n, previous int) bool {
	return app.RefusesEmpty(n, previous)
}

// DefaultNamespace is app.DefaultNamespace.
//
//go:fix inline
func DefaultNamespace(app *gitsyncv1.Application) string { return app.DefaultNamespace() }

// IgnorePointers is app.IgnorePointers.
//
//go:fix inline
func IgnorePointers(app *gitsyncv1.Application, obj *unstructured.Unstructured) []string {
	return app.IgnorePointers(obj)
}

// ChartKey is sourceid.ChartKey.
//
//go:fix inline
func ChartKey(repo *gitsyncv1.HelmRepository) string { return sourceid.ChartKey(repo) }
