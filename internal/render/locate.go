package render

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// SourceKey is the key of an Application's source (sourceRef.namespace, or its own).
func SourceKey(app *gitsyncv1.Application) types.NamespacedName {
	ns := app.Spec.SourceRef.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: app.Spec.SourceRef.Name}
}

// GitRequest is the fetch of ref from a GitRepository: its URL, spec.ignore, timeout and
// the credentials of spec.secretRef, read through reader (uncached where it matters).
// The one builder of a fetch request: the source controller, a pinned revision and the
// CLI all use it. Error texts name the Secret, never its values.
func GitRequest(ctx context.Context, reader client.Reader, repo *gitsyncv1.GitRepository, ref source.Ref) (source.Request, error) {
	req := source.Request{URL: repo.Spec.URL, Ref: ref, Ignore: IgnoreLines(repo.Spec.Ignore), Timeout: repo.GetTimeout().Duration,
		Key: RepositoryKey(repo)}
	if repo.Spec.SecretRef == nil {
		return req, nil
	}
	key := types.NamespacedName{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return req, fmt.Errorf("reading secret %s: %w", key, err)
	}
	auth, err := source.AuthFromSecret(secret.Data)
	if err != nil {
		return req, fmt.Errorf("secret %s: %w", key, err)
	}
	req.Auth = auth
	return req, nil
}

// RepositoryKey is the identity a GitRepository's checkouts are stored under: the
// endpoint its URL dials (source.RepositoryKey: scheme, host, port and path as the one
// parse reads them, never the URL's text) and its credentials (the namespace and name of
// spec.secretRef; none for an anonymous fetch). Another tenant's GitRepository that names the same commit has another key,
// so it never reads this one's checkout (source.DirName).
func RepositoryKey(repo *gitsyncv1.GitRepository) string {
	credentials := ""
	if repo.Spec.SecretRef != nil {
		credentials = repo.Namespace + "/" + repo.Spec.SecretRef.Name
	}
	return source.RepositoryKey(repo.Spec.URL, credentials)
}

// IgnoreLines passes spec.ignore to the fetcher, which splits and normalises it.
func IgnoreLines(ignore string) []string {
	if ignore == "" {
		return nil
	}
	return []string{ignore}
}

// HelmSource reads a HelmRepository's URL, timeout and spec.secretRef (username,
// password, ca.crt) through reader. Error texts name the Secret, never its values.
func HelmSource(ctx context.Context, reader client.Reader, obj *gitsyncv1.HelmRepository) (chartrepo.Source, error) {
	src := chartrepo.Source{URL: obj.Spec.URL, Timeout: obj.GetTimeout().Duration, Key: ChartKey(obj)}
	if obj.Spec.SecretRef == nil {
		return src, nil
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return src, fmt.Errorf("reading secret %s: %w", key, err)
	}
	src.Username, src.Password, src.CA = string(secret.Data["username"]), string(secret.Data["password"]), secret.Data["ca.crt"]
	if (src.Username == "") != (src.Password == "") {
		return src, fmt.Errorf("secret %s: username and password go together", key)
	}
	return src, nil
}

// ChartKey is the identity a HelmRepository's chart archives are cached under: its URL
// and its credentials (spec.secretRef's namespace and name). A chart another tenant's
// repository downloaded is never served from the cache to this one.
func ChartKey(repo *gitsyncv1.HelmRepository) string {
	credentials := ""
	if repo.Spec.SecretRef != nil {
		credentials = repo.Namespace + "/" + repo.Spec.SecretRef.Name
	}
	return chartrepo.CacheKey(repo.Spec.URL, credentials)
}

// ReadIndex polls repo into store with the credentials read through reader, without a
// previous index (for oci://, the tags of chart), and returns the index's digest and
// the source it polled.
func ReadIndex(ctx context.Context, store *chartrepo.Store, reader client.Reader, repo *gitsyncv1.HelmRepository, chart string) (string, chartrepo.Source, error) {
	src, err := HelmSource(ctx, reader, repo)
	if err != nil {
		return "", src, err
	}
	poll, err := store.Poll(ctx, src, "", []string{chart})
	return poll.Digest, src, err
}

// ChartRevision is the revision of a chart from a HelmRepository: `<chart>@<version>`.
func ChartRevision(chart, version string) string { return chart + "@" + version }

// LocateChart finds app's chart in its HelmRepository the way a sync would, outside the
// operator: the index is read (or, for oci://, the chart's tags listed) into store and
// the version that spec.helm.version selects is downloaded, with the repository's
// Secret read through reader. It returns the archive's path and the revision.
func LocateChart(ctx context.Context, reader client.Reader, app *gitsyncv1.Application, store *chartrepo.Store) (string, string, error) {
	key := SourceKey(app)
	repo := &gitsyncv1.HelmRepository{}
	if err := reader.Get(ctx, key, repo); err != nil {
		return "", "", fmt.Errorf("reading source HelmRepository %s: %w", key, err)
	}
	if app.Spec.Helm == nil || app.Spec.Helm.Chart == "" {
		return "", "", fmt.Errorf("spec.helm.chart is required with a HelmRepository source")
	}
	digest, src, err := ReadIndex(ctx, store, reader, repo, app.Spec.Helm.Chart)
	if err != nil {
		return "", "", fmt.Errorf("reading HelmRepository %s: %w", key, err)
	}
	cv, err := store.Resolve(digest, app.Spec.Helm.Chart, app.Spec.Helm.Version)
	if err != nil {
		return "", "", fmt.Errorf("HelmRepository %s: %w", key, err)
	}
	revision := ChartRevision(cv.Name, cv.Version)
	path, _, err := store.Fetch(ctx, src, cv)
	if err != nil {
		return "", revision, fmt.Errorf("pulling chart %s: %w", revision, err)
	}
	return path, revision, nil
}
