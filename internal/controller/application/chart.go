package application

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// chartLocation is a resolved chart of a HelmRepository, or why it is not at hand.
type chartLocation struct {
	repo     *gitsyncv1.HelmRepository
	version  *chartrepo.ChartVersion
	revision string
	// reason and msg say why not, with stalled for what waiting cannot fix.
	reason, msg string
	stalled     bool
}

// resolveChart picks the chart version of spec.helm.version in the HelmRepository's
// current index (the digest of its status, or, for a repository another shard polls,
// this replica's own read), with no download: sourceid.ResolveChart, with why not turned
// into a reason.
func (r *Reconciler) resolveChart(ctx context.Context, app *gitsyncv1.Application) (*chartLocation, error) {
	key := sourceid.Key(app)
	chart, err := sourceid.ResolveChart(ctx, r.Client, r.Charts, app, r.indexOf(app))
	var notFound *sourceid.NotFoundError
	switch {
	case err == nil:
		return &chartLocation{repo: chart.Repo, version: chart.Version, revision: chart.Revision}, nil
	case chart == nil && apierrors.IsNotFound(err):
		return &chartLocation{repo: &gitsyncv1.HelmRepository{}, reason: gitsyncv1.ArtifactNotReadyReason,
			msg: fmt.Sprintf("source HelmRepository %s does not exist", key)}, nil
	case chart == nil:
		return nil, err
	}
	loc := &chartLocation{repo: chart.Repo}
	switch {
	case errors.Is(err, sourceid.ErrNoChart):
		loc.reason, loc.msg, loc.stalled = gitsyncv1.ChartNotFoundReason, err.Error(), true
	case errors.Is(err, sourceid.ErrNoIndex):
		loc.reason, loc.msg = gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("source HelmRepository %s has no index yet", key)
	case errors.As(err, &notFound) && notFound.Unlisted:
		// The repository lists the tags of the charts its Applications name; this one is
		// new to it (its watch of Applications asks for a poll).
		loc.reason, loc.msg = gitsyncv1.ArtifactNotReadyReason,
			fmt.Sprintf("HelmRepository %s has not listed the tags of chart %s yet", key, notFound.Chart)
	case notFound != nil:
		loc.reason, loc.msg, loc.stalled = gitsyncv1.ChartNotFoundReason, err.Error(), true
	default:
		return nil, err
	}
	return loc, nil
}

// indexOf is where app's chart resolves (a sourceid.Index): the index of its
// HelmRepository's status artifact, which this replica polled, or, when another shard's
// replica polls the repository and holds the index on its disk, this replica's own read.
func (r *Reconciler) indexOf(app *gitsyncv1.Application) sourceid.Index {
	return func(ctx context.Context, repo *gitsyncv1.HelmRepository, chart string) (string, error) {
		artifact := repo.Status.Artifact
		if artifact == nil || r.Charts == nil {
			return "", sourceid.ErrNoIndex
		}
		if r.Charts.HasIndex(artifact.Digest) {
			return artifact.Digest, nil
		}
		if !r.Shard.Enabled() || r.Shard.Owns(repo) {
			return "", sourceid.ErrNoIndex
		}
		own, _, err := r.pollIndex(ctx, app, repo, chart)
		if err != nil {
			return "", fmt.Errorf("reading the index of HelmRepository %s (polled by another shard): %w", sourceid.Key(app), err)
		}
		return own, nil
	}
}

// reconcileChartSource is reconcileSource for a HelmRepository source: the chart version
// that spec.helm.version selects in the repository's index is the revision, and its
// archive (downloaded once, then from the cache) is what reconcileBuild renders. Sets
// Ready=False with ArtifactNotReady (no index yet), ChartNotFound (stalled until the index
// or the spec changes), AuthenticationFailed or ChartPullFailed (a timeout among them);
// nothing is applied then and the last applied chart stays. The download never holds the
// worker longer than waitInWorker: a slow one goes on in the background (Reconciling,
// Ready=Unknown/Progressing meanwhile) within chartTimeout, and a later reconcile takes
// its outcome.
func (r *Reconciler) reconcileChartSource(ctx context.Context, s *syncRun) outcome {
	app := s.app
	if app.Spec.PinnedRevision != "" {
		return r.revisionStalled(s, gitsyncv1.ChartNotFoundReason,
			"spec.pinnedRevision pins a Git commit: with a HelmRepository source, pin the chart with spec.helm.version")
	}
	loc, err := r.resolveChart(ctx, app)
	if err != nil {
		return retry(err)
	}
	if loc.reason != "" {
		if loc.stalled {
			s.revision = ""
			return r.revisionStalled(s, loc.reason, loc.msg)
		}
		return waitFor(r.retryInterval(), loc.reason, loc.msg)
	}
	s.revision = loc.revision
	if awaitingSyncRequest(s) {
		return waitFor(0, "", "")
	}
	if path, ok := r.Charts.CachedVersion(sourceid.ChartKey(loc.repo), loc.version); ok {
		// A resync: no download, and no read of the repository's Secrets unless it
		// verifies (then its signature is checked again, with fresh keys).
		if out, ok := r.verifyChart(ctx, s, loc, path); !ok {
			return out
		}
		s.dir = path
		return done()
	}
	src, err := r.helmSource(ctx, app, loc.repo)
	if err != nil {
		return revisionRetry(gitsyncv1.SecretNotFoundReason, err)
	}
	path, _, err := r.Charts.FetchWithin(ctx, src, loc.version, r.waitInWorker())
	switch {
	case err == nil:
	case errors.Is(err, chartrepo.ErrInProgress):
		return r.chartDownloading(s, loc, err)
	case chartrepo.IsUnauthorized(err):
		return revisionRetry(gitsyncv1.AuthenticationFailedReason, fmt.Errorf("pulling chart %s: %w", loc.revision, err))
	case errors.Is(err, chartrepo.ErrTooLarge) || errors.Is(err, chartrepo.ErrDigestMismatch):
		return r.revisionStalled(s, gitsyncv1.ChartPullFailedReason, fmt.Sprintf("pulling chart %s: %v", loc.revision, err))
	default:
		return revisionRetry(gitsyncv1.ChartPullFailedReason, fmt.Errorf("pulling chart %s: %w", loc.revision, err))
	}
	if out, ok := r.verifyChart(ctx, s, loc, path); !ok {
		return out
	}
	s.dir = path
	return done()
}

// chartDownloading stops the steps while the chart's download goes on in the background
// and looks again after retryInterval: Reconciling and Ready=Unknown/Progressing say so,
// unless Ready already says why the last download of this revision failed (a retry after
// a timeout keeps saying it timed out).
func (r *Reconciler) chartDownloading(s *syncRun, loc *chartLocation, err error) outcome {
	app := s.app
	msg := fmt.Sprintf("pulling chart %s from HelmRepository %s: %v", loc.revision, loc.repo.Name, err)
	failed := conditions.IsFalse(app, gitsyncv1.ReadyCondition) && app.Status.Sync != nil && app.Status.Sync.Revision == s.revision &&
		slices.Contains([]string{gitsyncv1.ChartPullFailedReason, gitsyncv1.AuthenticationFailedReason},
			conditions.GetReason(app, gitsyncv1.ReadyCondition))
	if !failed {
		conditions.MarkReconciling(app, gitsyncv1.ProgressingReason, "%s", msg)
		conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, gitsyncv1.ProgressingReason, "%s", msg)
	}
	return waitFor(r.retryInterval(), "", "")
}

// cachedChart is the stored archive of a revision of a HelmRepository chart, if the
// cache holds it (no request).
func (r *Reconciler) cachedChart(ctx context.Context, app *gitsyncv1.Application, revision string) (string, bool) {
	name, version, ok := strings.Cut(revision, "@")
	if !ok || r.Charts == nil {
		return "", false
	}
	repo := &gitsyncv1.HelmRepository{}
	if err := r.Get(ctx, sourceid.Key(app), repo); err != nil {
		return "", false
	}
	return r.Charts.Cached(sourceid.ChartKey(repo), name, version)
}

// pollIndex reads a HelmRepository's index as its own poll would (for oci://, the tags of
// chart) and returns its digest and the source it polled. The poll runs in the
// background within chartTimeout and holds the worker no longer than waitInWorker
// (chartrepo.ErrInProgress then).
func (r *Reconciler) pollIndex(ctx context.Context, app *gitsyncv1.Application, repo *gitsyncv1.HelmRepository, chart string) (string, chartrepo.Source, error) {
	src, err := r.helmSource(ctx, app, repo)
	if err != nil {
		return "", src, err
	}
	poll, err := r.Charts.PollWithin(ctx, src, chart, r.waitInWorker())
	return poll.Digest, src, err
}

// helmSource is the repository's Source for a download in app's reconcile: its
// credentials, chartTimeout, and app's namespace as the tenant of its background
// downloads.
func (r *Reconciler) helmSource(ctx context.Context, app *gitsyncv1.Application, repo *gitsyncv1.HelmRepository) (chartrepo.Source, error) {
	if r.SecretAccess != nil {
		if err := r.SecretAccess.CheckHelmRepository(ctx, repo); err != nil {
			return chartrepo.Source{}, err
		}
	}
	src, err := sourceid.HelmSource(ctx, r.APIReader, repo)
	src.Timeout, src.Tenant = r.chartTimeout(app, repo), app.Namespace
	return src, err
}

// chartTimeout bounds each poll and download of repo's charts (each request, its body
// included) in app's reconcile: the HelmRepository's spec.timeout within the operator's
// --max-timeout, and never more than the Application's own timeout.
func (r *Reconciler) chartTimeout(app *gitsyncv1.Application, repo *gitsyncv1.HelmRepository) time.Duration {
	d, _ := r.Caps.Timeout("spec.timeout", repo.GetTimeout().Duration)
	if own := r.timeout(app); own > 0 && own < d {
		d = own
	}
	if d <= 0 {
		d = gitsyncv1.DefaultHelmRepositoryTimeout
	}
	return d
}
