package ui

import (
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// SourceView is one source of an Application of spec.sources, on its page.
type SourceView struct {
	// Name is Kind/namespace/name, and Link its row in the sources view.
	Name string `json:"name"`
	Link string `json:"link"`
	// Path is the source's path, or its chart (and version) for a HelmRepository.
	Path string `json:"path,omitempty"`
	// Revision is the source's revision the last sync applied.
	Revision string `json:"revision,omitempty"`
}

// sourcesOf lists the sources of app's spec.sources with their last applied revisions.
func sourcesOf(app *gitsyncv1.Application) []SourceView {
	applied := map[string]string{}
	for _, e := range gitsyncv1.SplitRevision(app.Status.LastAppliedRevision) {
		applied[e.Source] = e.Revision
	}
	var out []SourceView
	for i, src := range app.Spec.Sources {
		key := sourceid.Key(app.ForSource(i))
		v := SourceView{Name: src.SourceRef.Kind + "/" + key.Namespace + "/" + key.Name, Path: operations.PathOrDot(src.Path),
			Revision: operations.ShortRevision(applied[app.SourceName(src.SourceRef)])}
		v.Link = "/sources#" + v.Name
		if src.SourceRef.Kind == gitsyncv1.HelmRepositoryKind && src.Helm != nil {
			v.Path = src.Helm.Chart
			if src.Helm.Version != "" {
				v.Path += " " + src.Helm.Version
			}
		}
		out = append(out, v)
	}
	return out
}

// revisionCell is the short revision of the applications list and page: the commit's
// first digits, or with spec.sources each source's name and short revision.
func revisionCell(app *gitsyncv1.Application) string {
	if app.MultiSource() {
		return operations.RevisionCell(app.Status.LastAppliedRevision)
	}
	return shortRevision(app.Status.LastAppliedRevision)
}
