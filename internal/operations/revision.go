package operations

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/phase"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// AppDiff is one Application's part of a revision's diff: its Diff, or the error that
// stopped its render or its compare (in words, values masked).
type AppDiff struct {
	App  *gitsyncv1.Application
	Diff *Diff
	Err  error
}

// Counts are a diff's outcomes by action.
type Counts struct {
	Created, Configured, Pruned, Unchanged, Failed, Encrypted int
}

// Counts counts d's outcomes.
func (d *Diff) Counts() Counts {
	var c Counts
	for _, o := range d.Outcomes {
		switch o.Action {
		case drift.Created:
			c.Created++
		case drift.Configured:
			c.Configured++
		case PrunedAction:
			c.Pruned++
		case drift.Unchanged:
			c.Unchanged++
		case Failed:
			c.Failed++
		case Encrypted:
			c.Encrypted++
		}
	}
	return c
}

// Failed tells whether the Application could not be rendered or compared, or the API
// server refused an object of it.
func (a AppDiff) Failed() bool { return a.Err != nil || (a.Diff != nil && a.Diff.Counts().Failed > 0) }

// Changes tells whether a sync of the revision would change the Application's objects.
func (a AppDiff) Changes() bool { return a.Diff != nil && a.Diff.Changes() }

// Name is `namespace/name`.
func (a AppDiff) Name() string { return a.App.Namespace + "/" + a.App.Name }

// Actor is who renders and dry-runs an Application: the client (the person's, or the
// Application's service account's for a preview) and the render's cluster access
// (without decryption keys).
type Actor struct {
	Client  client.Client
	Cluster *render.Cluster
}

// RenderFunc renders an Application as render.Render does (the operator's worker pool).
type RenderFunc func(context.Context, *gitsyncv1.Application, render.Source, *render.Cluster) (*render.Result, error)

// DiffAppsAt renders each of apps at head (a checkout of a revision of one
// GitRepository; an Application's other Git sources — of spec.sources or
// helm.valuesFilesFrom — at their current artifacts through head.Others), never
// decrypting (SOPS-encrypted content stays encrypted and is not compared), and compares
// it with the cluster as actor(app) does (CompareEach: every refused object is named). A
// failure is that Application's Err; the others go on. The CLI's `diff source
// --revision` and the pull-request preview share it.
func DiffAppsAt(ctx context.Context, apps []*gitsyncv1.Application, head Head, actor func(*gitsyncv1.Application) (Actor, error), rf RenderFunc) []AppDiff {
	if rf == nil {
		rf = render.Render
	}
	out := make([]AppDiff, 0, len(apps))
	for _, app := range apps {
		if ctx.Err() != nil {
			out = append(out, AppDiff{App: app, Err: ctx.Err()})
			continue
		}
		d := AppDiff{App: app}
		d.Diff, d.Err = diffAppAt(ctx, app, head, actor, rf)
		out = append(out, d)
	}
	return out
}

func diffAppAt(ctx context.Context, app *gitsyncv1.Application, head Head, actor func(*gitsyncv1.Application) (Actor, error), rf RenderFunc) (*Diff, error) {
	a, err := actor(app)
	if err != nil {
		return nil, err
	}
	r, err := renderAtHead(ctx, app, head, a, rf) // revision_sources.go
	if err != nil {
		return nil, err
	}
	plan, err := phase.New(r.Objects)
	if err != nil {
		return nil, err
	}
	objs := plan.Objects()
	var hooks []string
	for _, h := range plan.Hooks() {
		hooks = append(hooks, h.Phase+" "+apply.Subject(h.Object))
	}
	outcomes, err := CompareEach(ctx, a.Client, app, objs)
	if err != nil {
		return nil, fmt.Errorf("%s", redact.Values(err.Error(), r.Sensitive...))
	}
	for i := range outcomes {
		outcomes[i].Err = redact.Values(outcomes[i].Err, r.Sensitive...)
	}
	return &Diff{App: app, Rendered: r, Outcomes: outcomes, Hooks: hooks}, nil
}

// AppsOf lists the Applications whose source (or one of spec.sources) is the
// GitRepository key (its own namespace's, and other namespaces' that name it), sorted by
// namespace and name.
func AppsOf(ctx context.Context, c client.Reader, key client.ObjectKey) ([]*gitsyncv1.Application, error) {
	list := &gitsyncv1.ApplicationList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	var out []*gitsyncv1.Application
	for i := range list.Items {
		app := &list.Items[i]
		if readsGitRepository(app, key) { // revision_sources.go
			out = append(out, app)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, nil
}

// DiffSourceAt fetches revision (a branch, `<branch>@sha1:<commit>` or a commit) of the
// GitRepository key once and diffs every Application on it (DiffAppsAt) as the person
// c and cfg act as, without decrypting; with lookup a chart's lookup reads as them.
func DiffSourceAt(ctx context.Context, cfg *rest.Config, c client.Client, key client.ObjectKey, revision string, lookup bool) ([]AppDiff, string, error) {
	repo := &gitsyncv1.GitRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, "", fmt.Errorf("reading GitRepository %s: %w", key, err)
	}
	apps, err := AppsOf(ctx, c, key)
	if err != nil {
		return nil, "", err
	}
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, "", fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetcher, err := source.NewFetcher(tmp)
	if err != nil {
		return nil, "", err
	}
	ref := RevisionRef(repo, revision)
	request, err := sourceid.GitRequest(ctx, c, repo, ref)
	if err != nil {
		return nil, "", fmt.Errorf("reading the credentials of %s: %w", key, err)
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		return nil, "", fmt.Errorf("fetching %s of %s: %w", ref, key, err)
	}
	head := Head{Key: key, Root: artifact.Dir, Revision: artifact.Revision, Others: currentCheckouts(c, tmp),
		Current: func(ctx context.Context, view *gitsyncv1.Application, cluster *render.Cluster, roots map[string]string) (*Rendered, error) {
			return renderSourceAt(ctx, c, view, "", cluster, false, roots) // render.go
		}}
	diffs := DiffAppsAt(ctx, apps, head, func(app *gitsyncv1.Application) (Actor, error) {
		return Actor{Client: c, Cluster: Cluster(cfg, c, app, false, lookup)}, nil
	}, nil)
	return diffs, artifact.Revision, nil
}

// RevisionRef is the ref of a revision a person names: a branch name, `<branch>@sha1:
// <commit>` or a commit alone (then in the branch the GitRepository follows).
func RevisionRef(repo *gitsyncv1.GitRepository, revision string) source.Ref {
	revision = strings.TrimSpace(revision)
	commit := source.CommitOf(revision)
	if commit == "" {
		return source.Ref{Branch: revision}
	}
	ref := source.Ref{Commit: commit}
	if branch, _, ok := strings.Cut(revision, "@"); ok && branch != "" {
		ref.Branch = branch
	} else if repo.Spec.Ref != nil {
		ref.Branch = repo.Spec.Ref.Branch
	}
	return ref
}

// Table is the per-Application summary of a revision's diff, as `gitsync diff source`
// prints it and the pull-request comment shows it: one row per Application with the
// counts, or its error.
func Table(diffs []AppDiff) [][]string {
	rows := [][]string{{"APPLICATION", "CREATED", "CONFIGURED", "PRUNED", "UNCHANGED", "RESULT"}}
	for _, d := range diffs {
		if d.Err != nil {
			rows = append(rows, []string{d.Name(), "-", "-", "-", "-", "error"})
			continue
		}
		c := d.Diff.Counts()
		result := "no changes"
		switch {
		case c.Failed > 0:
			result = fmt.Sprintf("%d refused", c.Failed)
		case d.Changes():
			result = "changes"
		}
		rows = append(rows, []string{d.Name(), fmt.Sprint(c.Created), fmt.Sprint(c.Configured), fmt.Sprint(c.Pruned), fmt.Sprint(c.Unchanged), result})
	}
	return rows
}
