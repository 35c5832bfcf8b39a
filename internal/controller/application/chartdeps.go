package application

import (
	"context"
	"errors"
	"fmt"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// maxDependencyDepth bounds dependencies of dependencies.
const maxDependencyDepth = 5

// chartDependencies adds to c the dependencies that its charts/ folder does not hold,
// each from a HelmRepository of the Application's namespace whose URL is the
// dependency's repository (at the version Chart.lock pins, else the highest match of
// its range). A chart never makes gitsync fetch from a URL no HelmRepository names; what
// no HelmRepository serves stays missing, and CheckDependencies says so.
func (r *Reconciler) chartDependencies(ctx context.Context, app *gitsyncv1.Application, c *chart.Chart, depth int) error {
	missing := helm.MissingDependencies(c)
	if len(missing) == 0 || r.Charts == nil {
		return nil
	}
	if depth >= maxDependencyDepth {
		return fmt.Errorf("chart %s: dependencies nested deeper than %d", c.Name(), maxDependencyDepth)
	}
	repos := &gitsyncv1.HelmRepositoryList{}
	if err := r.List(ctx, repos, client.InNamespace(app.Namespace)); err != nil {
		return fmt.Errorf("listing HelmRepositories for the dependencies of chart %s: %w", c.Name(), err)
	}
	for _, dep := range missing {
		repo := repositoryFor(repos.Items, dep.Repository)
		if repo == nil {
			continue
		}
		sub, err := r.pullDependency(ctx, app, repo, dep)
		if err != nil {
			err = fmt.Errorf("chart %s: dependency %s %s from HelmRepository %s: %w", c.Name(), dep.Name, dep.Version, repo.Name, err)
			if errors.Is(err, chartrepo.ErrChartNotFound) || errors.Is(err, chartrepo.ErrTooLarge) || errors.Is(err, chartrepo.ErrDigestMismatch) {
				return err
			}
			return &render.RetryableError{Err: err} // no index yet, or the repository did not answer
		}
		if err := r.chartDependencies(ctx, app, sub, depth+1); err != nil {
			return err
		}
		c.AddDependency(sub)
	}
	return nil
}

// pullDependency resolves and loads one dependency from repo: from its index, or for an
// oci:// repository from a listing of that chart's tags (within chartTimeout). A cached
// archive costs no request; the repository's Secret is read once at most. A download
// holds the render no longer than waitInWorker: a slow one goes on in the background
// (within chartTimeout) and the error is then retryable (chartrepo.ErrInProgress).
func (r *Reconciler) pullDependency(ctx context.Context, app *gitsyncv1.Application, repo *gitsyncv1.HelmRepository, dep *chart.Dependency) (*chart.Chart, error) {
	var digest string
	var src *chartrepo.Source
	switch {
	case chartrepo.IsOCI(repo.Spec.URL) || (repo.Status.Artifact != nil && r.Shard.Enabled() && !r.Shard.Owns(repo)):
		// OCI: the tags of this chart; another shard's repository: its index, read here.
		d, polled, err := r.pollIndex(ctx, app, repo, dep.Name)
		if err != nil {
			return nil, err
		}
		digest, src = d, &polled
	case repo.Status.Artifact != nil && r.Charts.HasIndex(repo.Status.Artifact.Digest):
		digest = repo.Status.Artifact.Digest
	default:
		return nil, fmt.Errorf("the repository has no index yet")
	}
	cv, err := r.Charts.Resolve(digest, dep.Name, dep.Version)
	if err != nil {
		return nil, err
	}
	path, ok := r.Charts.CachedVersion(sourceid.ChartKey(repo), cv)
	if !ok {
		if src == nil {
			read, err := r.helmSource(ctx, app, repo)
			if err != nil {
				return nil, err
			}
			src = &read
		}
		if path, _, err = r.Charts.FetchWithin(ctx, *src, cv, r.waitInWorker()); err != nil {
			return nil, err
		}
	}
	return helm.LoadArchive(path)
}

// repositoryFor finds the HelmRepository whose URL is url (trailing slashes and the case
// of scheme and host aside).
func repositoryFor(repos []gitsyncv1.HelmRepository, url string) *gitsyncv1.HelmRepository {
	want := normalizeRepoURL(url)
	if want == "" {
		return nil
	}
	for i := range repos {
		if normalizeRepoURL(repos[i].Spec.URL) == want {
			return &repos[i]
		}
	}
	return nil
}

func normalizeRepoURL(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	scheme, rest, ok := strings.Cut(u, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "https" && scheme != "http" && scheme != "oci") {
		return "" // "@alias", "file://…" paths and the like are never fetched
	}
	host, path, _ := strings.Cut(rest, "/")
	if path != "" {
		path = "/" + path
	}
	return scheme + "://" + strings.ToLower(host) + path
}
