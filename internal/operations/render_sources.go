package operations

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// valuesCheckouts are the fetched checkouts of the GitRepositories that
// helm.valuesFilesFrom reads (of every source), for a person's render.
type valuesCheckouts struct {
	// roots are the checkouts by ValuesSourceReference.Key; revisions are
	// `GitRepository/<name>@<revision>`, one per source, in spec order.
	roots     map[string]string
	revisions []string
	tmp       string
}

// cleanup removes the checkouts.
func (v valuesCheckouts) cleanup() {
	if v.tmp != "" {
		os.RemoveAll(v.tmp)
	}
}

// fetchValuesSources fetches the current artifact of each GitRepository that app's
// helm.valuesFilesFrom reads (in app's namespace) into a temporary directory, with the
// person's rights to it and its credentials; nothing without valuesFilesFrom.
func fetchValuesSources(ctx context.Context, c client.Client, app *gitsyncv1.Application) (valuesCheckouts, error) {
	var v valuesCheckouts
	for _, src := range app.SourceList() {
		if src.Helm == nil {
			continue
		}
		for _, ref := range src.Helm.ValuesFilesFrom {
			key := ref.SourceRef.Key()
			if _, ok := v.roots[key]; ok {
				continue
			}
			if v.tmp == "" {
				tmp, err := os.MkdirTemp("", "gitsync-cli-values-")
				if err != nil {
					return v, fmt.Errorf("creating a temporary directory: %w", err)
				}
				v.tmp, v.roots = tmp, map[string]string{}
			}
			dir, err := os.MkdirTemp(v.tmp, "source-")
			if err != nil {
				return v, fmt.Errorf("creating a temporary directory: %w", err)
			}
			nn := types.NamespacedName{Namespace: app.Namespace, Name: ref.SourceRef.Name}
			artifact, rev, err := fetchGit(ctx, c, nn, dir, CurrentRef)
			if err != nil {
				return v, fmt.Errorf("values source %s: %w", key, err)
			}
			v.roots[key] = artifact.Dir
			v.revisions = append(v.revisions, gitsyncv1.SourceRevision(key, rev))
		}
	}
	return v, nil
}

// renderSources renders each source of spec.sources at its current artifact (as
// RenderFromSource renders one) and joins the objects, as the sync does: an object that
// two sources render is an error naming both.
func renderSources(ctx context.Context, c client.Client, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool, values valuesCheckouts) (*Rendered, error) {
	var joined render.Joined
	var entries []string
	for i, src := range app.Spec.Sources {
		label := app.SourceLabel(i)
		r, err := renderSourceAt(ctx, c, app.ForSource(i), "", cluster, decrypt, values.roots)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if err := joined.Add(label, &render.Result{Objects: r.Objects, Encrypted: r.Encrypted, Sensitive: r.Sensitive}); err != nil {
			return nil, err
		}
		entries = append(entries, gitsyncv1.SourceRevision(app.SourceName(src.SourceRef), r.Revision))
	}
	out := &Rendered{ValuesRevisions: values.revisions, Objects: joined.Objects, Encrypted: joined.Encrypted, Sensitive: joined.Sensitive}
	out.Revision = gitsyncv1.JoinRevisions(entries)
	out.From = NewRendered(&render.Result{Objects: out.Objects, Offline: cluster == nil, Encrypted: out.Encrypted}, "revision "+out.Revision).From
	return out, nil
}

// SourceChange is a source whose revision differs from the one the Application last
// applied: one of spec.sources, spec.sourceRef, or a source of helm.valuesFilesFrom.
type SourceChange struct {
	// Source is `<Kind>/<name>`; From is the revision last applied ("" when the source
	// is new to the Application), To the one rendered now.
	Source, From, To string
}

// ChangedSources compares the revisions a render read (revision: the Application's,
// joined with spec.sources; values: helm.valuesFilesFrom's) with those of app's last
// applied sync (status.lastAppliedRevision and status.valuesRevisions): one entry per
// source whose revision changed, in order.
func ChangedSources(app *gitsyncv1.Application, revision string, values []string) []SourceChange {
	name := ""
	if !app.MultiSource() {
		name = app.SourceName(app.Spec.SourceRef)
	}
	entries := func(rev string, values []string) ([]string, map[string]string) {
		var order []string
		at := map[string]string{}
		add := func(e gitsyncv1.SourceRevisionEntry) {
			src := e.Source
			if src == "" {
				src = name
			}
			if _, ok := at[src]; !ok {
				order = append(order, src)
				at[src] = e.Revision
			}
		}
		for _, e := range gitsyncv1.SplitRevision(rev) {
			add(e)
		}
		for _, v := range values {
			for _, e := range gitsyncv1.SplitRevision(v) {
				add(e)
			}
		}
		return order, at
	}
	order, now := entries(revision, values)
	_, before := entries(app.Status.LastAppliedRevision, app.Status.ValuesRevisions)
	var out []SourceChange
	for _, src := range order {
		if now[src] != before[src] {
			out = append(out, SourceChange{Source: src, From: before[src], To: now[src]})
		}
	}
	return out
}

// SourceSummary names an Application's sources in one cell (`gitsync get apps -o
// wide`'s SOURCE): `<Kind>/<name>` of its one source, the names of several joined by
// "," ("GitRepository/a,HelmRepository/charts"), or "N sources" when that is long.
func SourceSummary(app *gitsyncv1.Application) string {
	var names []string
	for _, src := range app.SourceList() {
		if n := app.SourceName(src.SourceRef); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	joined := strings.Join(names, ",")
	if len(names) > 1 && len(joined) > maxSourceSummary {
		return fmt.Sprintf("%d sources", len(names))
	}
	return joined
}

// maxSourceSummary is the longest list of sources SourceSummary writes out.
const maxSourceSummary = 60

// SourceChanges are the sources whose revisions the diff's render read differently from
// the Application's last applied sync (ChangedSources), for an Application of several
// sources (spec.sources, or helm.valuesFilesFrom); none for one source alone, whose
// revision the report's first line names.
func (d *Diff) SourceChanges() []SourceChange {
	if d.Rendered == nil || d.Rendered.Revision == "" || (!d.App.MultiSource() && len(d.Rendered.ValuesRevisions) == 0) {
		return nil
	}
	return ChangedSources(d.App, d.Rendered.Revision, d.Rendered.ValuesRevisions)
}

// ShortRevision shortens the digests of a source's revision for people: a commit to 7
// hex digits, a sha256 digest to 12 ("main@sha1:0123abc").
func ShortRevision(rev string) string {
	for _, algo := range []struct {
		prefix string
		keep   int
	}{{"sha1:", 7}, {"sha256:", 12}} {
		if i := strings.LastIndex(rev, algo.prefix); i >= 0 && len(rev)-i-len(algo.prefix) > algo.keep {
			return rev[:i+len(algo.prefix)+algo.keep]
		}
	}
	return rev
}

// RevisionCell shortens a revision of several sources for a table cell: each source's
// name and short revision, joined by "," ("a@main@sha1:0123abc,charts@web@1.0.0").
func RevisionCell(rev string) string {
	var parts []string
	for _, e := range gitsyncv1.SplitRevision(rev) {
		name := e.Source
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if name != "" {
			name += "@"
		}
		parts = append(parts, name+ShortRevision(e.Revision))
	}
	return strings.Join(parts, ",")
}
