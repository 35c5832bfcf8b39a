package application

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// renderParts renders each source of spec.sources with the one pipeline (renderFrom:
// the access check, the render workers and their bounds; one render per source, one
// after the other) and joins the objects. An error names the source ("sources[1]
// (GitRepository/b) at <revision>: …", keeping the render's error class); an object that
// two sources render is an error naming both. The chart of the result is the first
// source's chart, with the crds/ CRDs of every chart (create-only when any chart's
// policy is).
func (r *Reconciler) renderParts(ctx context.Context, parts []sourcePart, valuesRoots map[string]string) (*render.Result, error) {
	var out render.Joined
	for _, p := range parts {
		res, err := r.renderFrom(ctx, p.dir, valuesRoots, p.app)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", p.label, p.revision, err)
		}
		if err := out.Add(p.label, res); err != nil {
			return nil, err
		}
	}
	return &out.Result, nil
}

// partsAt are the sources of app's spec.sources at the revisions of a joined revision
// (a last applied one), each with its checkout or chart archive in storage; false when
// one of them is not there.
func (r *Reconciler) partsAt(ctx context.Context, app *gitsyncv1.Application, revision string) ([]sourcePart, bool) {
	revisions := map[string]string{}
	for _, e := range gitsyncv1.SplitRevision(revision) {
		if _, ok := revisions[e.Source]; !ok {
			revisions[e.Source] = e.Revision
		}
	}
	parts := make([]sourcePart, 0, len(app.Spec.Sources))
	for i, src := range app.Spec.Sources {
		rev, ok := revisions[app.SourceName(src.SourceRef)]
		if !ok {
			return nil, false // the spec names another source than that revision's
		}
		view := app.ForSource(i)
		view.Status.LastAppliedRevision = rev
		dir, ok := r.lastAppliedAtHand(ctx, view)
		if !ok {
			return nil, false
		}
		parts = append(parts, sourcePart{label: app.SourceLabel(i), app: view, dir: dir, revision: rev})
	}
	return parts, true
}

// renderCurrentSources is renderCurrent for spec.sources: every source at its current
// artifact, joined.
func (r *Reconciler) renderCurrentSources(ctx context.Context, app *gitsyncv1.Application) ([]*unstructured.Unstructured, error) {
	var joined render.Joined
	for i := range app.Spec.Sources {
		part, err := r.renderCurrent(ctx, app.ForSource(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", app.SourceLabel(i), err)
		}
		if err := joined.Add(app.SourceLabel(i), &render.Result{Objects: part}); err != nil {
			return nil, err
		}
	}
	return joined.Objects, nil
}
