package sourceid

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
)

// ErrNoChart is an Application with a HelmRepository source and no spec.helm.chart.
var ErrNoChart = errors.New("spec.helm.chart is required with a HelmRepository source")

// ErrNoIndex is what an Index returns while no index of the repository is at hand.
var ErrNoIndex = errors.New("no index yet")

// Chart is the chart version spec.helm.version selects in an Application's
// HelmRepository.
type Chart struct {
	Repo     *gitsyncv1.HelmRepository
	Version  *chartrepo.ChartVersion
	Revision string
}

// Index returns the digest of the index (in the store ResolveChart is given) that holds
// repo's chart: the status of the repository's poll in the operator, a fresh poll outside
// it. ErrNoIndex when none is at hand yet; other errors are returned as they are.
type Index func(ctx context.Context, repo *gitsyncv1.HelmRepository, chart string) (string, error)

// NotFoundError is a chart or version the repository's index does not hold. Unlisted
// says the oci:// repository has not listed the chart's tags yet (a later poll lists
// them: waiting fixes it).
type NotFoundError struct {
	Key      types.NamespacedName
	Chart    string
	Unlisted bool
	Err      error
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("HelmRepository %s: %v", e.Key, e.Err) }

func (e *NotFoundError) Unwrap() error { return e.Err }

// ResolveChart is the one chart resolver: it reads app's HelmRepository through reader,
// asks index for the digest of its index and picks the version spec.helm.version
// selects in store, with no download. It returns the repository it read with any error
// after the read: ErrNoChart, the error of index (ErrNoIndex among them), or a
// *NotFoundError.
func ResolveChart(ctx context.Context, reader client.Reader, store *chartrepo.Store, app *gitsyncv1.Application, index Index) (*Chart, error) {
	key := Key(app)
	repo := &gitsyncv1.HelmRepository{}
	if err := reader.Get(ctx, key, repo); err != nil {
		return nil, fmt.Errorf("reading source HelmRepository %s: %w", key, err)
	}
	chart := &Chart{Repo: repo}
	spec := app.Spec.Helm
	if spec == nil || spec.Chart == "" {
		return chart, ErrNoChart
	}
	digest, err := index(ctx, repo, spec.Chart)
	if err != nil {
		return chart, err
	}
	cv, err := store.Resolve(digest, spec.Chart, spec.Version)
	if err != nil {
		nf := &NotFoundError{Key: key, Chart: spec.Chart, Err: err}
		if idx, ierr := store.Index(digest); ierr == nil && chartrepo.IsOCI(repo.Spec.URL) {
			_, listed := idx.Entries[spec.Chart]
			nf.Unlisted = !listed
		}
		return chart, nf
	}
	chart.Version, chart.Revision = cv, ChartRevision(cv.Name, cv.Version)
	return chart, nil
}

// LocateChart finds app's chart in its HelmRepository the way a sync would, outside the
// operator: the index is read (or, for oci://, the chart's tags listed) into store and
// the version that spec.helm.version selects is downloaded, with the repository's
// Secret read through reader. It returns the archive's path and the revision.
func LocateChart(ctx context.Context, reader client.Reader, app *gitsyncv1.Application, store *chartrepo.Store) (string, string, error) {
	var src chartrepo.Source
	poll := func(ctx context.Context, repo *gitsyncv1.HelmRepository, chart string) (string, error) {
		digest, polled, err := ReadIndex(ctx, store, reader, repo, chart)
		if err != nil {
			return "", fmt.Errorf("reading HelmRepository %s: %w", Key(app), err)
		}
		src = polled
		return digest, nil
	}
	chart, err := ResolveChart(ctx, reader, store, app, poll)
	if err != nil {
		return "", "", err
	}
	path, _, err := store.Fetch(ctx, src, chart.Version)
	if err != nil {
		return "", chart.Revision, fmt.Errorf("pulling chart %s: %w", chart.Revision, err)
	}
	return path, chart.Revision, nil
}
