package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/renderworker"
)

// renderWorkers adds the render worker pool of opts to mgr (which warms it, and stops
// its workers with the manager) and returns the Application controller's Renderer; nil
// opts: nil, and Applications render in process.
func renderWorkers(mgr manager.Manager, opts *renderworker.Options) (func(context.Context, *gitsyncv1.Application, render.Source, *render.Cluster) (*render.Result, error), error) {
	if opts == nil {
		return nil, nil
	}
	pool, err := renderworker.New(*opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pool); err != nil {
		return nil, err
	}
	return pool.Render, nil
}
