package application

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
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
	out := &render.Result{}
	from := map[string]string{} // inventory ID → the label of the source that rendered it
	for _, p := range parts {
		res, err := r.renderFrom(ctx, p.dir, valuesRoots, p.app)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", p.label, p.revision, err)
		}
		for _, o := range res.Objects {
			id := apply.EntryOf(o).ID
			if other, ok := from[id]; ok {
				return nil, fmt.Errorf("%s is rendered by both %s and %s: an object may come from one source only",
					apply.Subject(o), other, p.label)
			}
			from[id] = p.label
		}
		out.Objects = append(out.Objects, res.Objects...)
		out.Offline = out.Offline || res.Offline
		out.Encrypted = append(out.Encrypted, res.Encrypted...)
		out.Sensitive = append(out.Sensitive, res.Sensitive...)
		joinChart(&out.Chart, res.Chart)
	}
	return out, nil
}

// joinChart adds a source's chart to the chart of a joined render.
func joinChart(into *render.Chart, c render.Chart) {
	if into.Name == "" {
		into.Name, into.Version = c.Name, c.Version
	}
	if len(c.CRDs) > 0 {
		if into.CRDs == nil {
			into.CRDs = map[string]bool{}
		}
		maps.Copy(into.CRDs, c.CRDs)
		into.CreateOnly = into.CreateOnly || c.CreateOnly
	}
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
	var objs []*unstructured.Unstructured
	ids := map[string]string{}
	for i := range app.Spec.Sources {
		part, err := r.renderCurrent(ctx, app.ForSource(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", app.SourceLabel(i), err)
		}
		for _, o := range part {
			id := apply.EntryOf(o).ID
			if other, ok := ids[id]; ok {
				return nil, fmt.Errorf("%s is rendered by both %s and %s", apply.Subject(o), other, app.SourceLabel(i))
			}
			ids[id] = app.SourceLabel(i)
		}
		objs = append(objs, part...)
	}
	return objs, nil
}
