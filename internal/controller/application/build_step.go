package application

import (
	"context"
	"fmt"
	"strings"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// reconcileBuild renders spec.path (each of spec.sources, joined: multibuild.go). A
// failure applies nothing: Ready=False/BuildFailed.
func (r *Reconciler) reconcileBuild(ctx context.Context, s *syncRun) outcome {
	if resumable(s) == nil {
		s.app.Status.SyncProgress = nil // a waiting sync of another revision or spec: superseded
	}
	s.attempted = true
	s.app.Status.LastAttemptedRevision = s.revision
	release := r.Storage.Acquire(s.dir) // checkout GC keeps it while the build reads it
	defer release()
	defer s.acquireParts(r.Storage)()
	defer s.values.acquire(r.Storage)()
	what := fmt.Sprintf("%s at %s", pathOf(s.app), s.revision)
	var res *render.Result
	var err error
	if len(s.parts) > 0 {
		what = "spec.sources"
		res, err = r.renderParts(ctx, s.parts, s.values.roots)
	} else {
		res, err = r.renderFrom(ctx, s.dir, s.values.roots, s.app)
	}
	if render.IsRetryable(err) {
		return revisionRetry(gitsyncv1.ArtifactNotReadyReason, fmt.Errorf("rendering chart %s: %w", what, err))
	}
	if render.IsLimit(err) {
		return r.revisionStalled(s, gitsyncv1.RenderLimitExceededReason, fmt.Sprintf("rendering %s: %v", what, err))
	}
	if render.IsValuesError(err) {
		return r.revisionStalled(s, gitsyncv1.ValuesNotFoundReason, fmt.Sprintf("rendering chart %s: %v", what, err))
	}
	if err != nil {
		return r.revisionStalled(s, gitsyncv1.BuildFailedReason, fmt.Sprintf("building %s: %v", what, err))
	}
	s.objects = res.Objects
	s.chart, s.chartVersion, s.chartCRDs = res.Chart.Name, res.Chart.Version, res.Chart
	if err := r.planSync(s); err != nil {
		reason := gitsyncv1.BuildFailedReason
		if len(s.app.Spec.HealthChecks) > 0 && strings.HasPrefix(err.Error(), "spec.healthChecks") {
			reason = gitsyncv1.HealthCheckInvalidReason
		}
		return r.revisionStalled(s, reason, fmt.Sprintf("building %s: %v", what, err))
	}
	return done()
}

// render renders the Application from a checkout (or, with a HelmRepository source,
// the chart archive at dir) as its sync does (see cluster), with the values sources at
// their current artifacts.
func (r *Reconciler) render(ctx context.Context, dir string, app *gitsyncv1.Application) (*render.Result, error) {
	values, _ := r.valuesSourcesOf(ctx, app) // one that is missing fails the render
	return r.renderFrom(ctx, dir, values.roots, app)
}

// renderFrom is render with the checkouts of the values sources given.
func (r *Reconciler) renderFrom(ctx context.Context, dir string, valuesRoots map[string]string, app *gitsyncv1.Application) (*render.Result, error) {
	if err := r.checkAccess(app); err != nil { // every render passes the one access check
		return nil, err
	}
	src := render.Source{Root: dir, Path: pathOf(app), ValuesRoots: valuesRoots}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		src = render.Source{Archive: dir, ValuesRoots: valuesRoots}
	}
	if r.Renderer != nil {
		return r.Renderer(ctx, app, src, r.cluster(app))
	}
	return render.Render(ctx, app, src, r.cluster(app))
}
