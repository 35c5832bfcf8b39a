package sourceid

import (
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Key is the key of an Application's source (sourceRef.namespace, or its own).
func Key(app *gitsyncv1.Application) types.NamespacedName {
	ns := app.Spec.SourceRef.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: app.Spec.SourceRef.Name}
}

// RepositoryKey is the identity a GitRepository's checkouts are stored under: the
// endpoint its URL dials (source.RepositoryKey: scheme, host, port and path as the one
// parse reads them, never the URL's text) and its credentials (the namespace and name of
// spec.secretRef; none for an anonymous fetch). Another tenant's GitRepository that
// names the same commit has another key, so it never reads this one's checkout
// (source.DirName). Stored checkouts are found by it: it must never change.
func RepositoryKey(repo *gitsyncv1.GitRepository) string {
	return source.RepositoryKey(repo.Spec.URL, credentials(repo.Namespace, repo.Spec.SecretRef))
}

// IgnoreLines passes spec.ignore to the fetcher, which splits and normalises it.
func IgnoreLines(ignore string) []string {
	if ignore == "" {
		return nil
	}
	return []string{ignore}
}

// Checkouts is where fetched commits are stored (a source.Fetcher).
type Checkouts interface {
	CheckoutDir(key, commit string, ignore []string) string
}

// CheckoutDir is where the checkout of commit fetched for repo is stored (it may not
// exist: never fetched, or garbage-collected).
func CheckoutDir(store Checkouts, repo *gitsyncv1.GitRepository, commit string) string {
	return store.CheckoutDir(RepositoryKey(repo), commit, IgnoreLines(repo.Spec.Ignore))
}

// DirName is the name of the directory the checkout of commit fetched for repo is
// stored in, below the storage's checkouts (source.DirName).
func DirName(repo *gitsyncv1.GitRepository, commit string) string {
	return source.DirName(RepositoryKey(repo), commit, IgnoreLines(repo.Spec.Ignore))
}

// ChartKey is the identity a HelmRepository's chart archives are cached under: its URL
// and its credentials (spec.secretRef's namespace and name). A chart another tenant's
// repository downloaded is never served from the cache to this one.
func ChartKey(repo *gitsyncv1.HelmRepository) string {
	return chartrepo.CacheKey(repo.Spec.URL, credentials(repo.Namespace, repo.Spec.SecretRef))
}

// ChartRevision is the revision of a chart from a HelmRepository: `<chart>@<version>`.
func ChartRevision(chart, version string) string { return chart + "@" + version }

// credentials names a source's Secret as "namespace/name", "" without one.
func credentials(namespace string, ref *gitsyncv1.LocalObjectReference) string {
	if ref == nil {
		return ""
	}
	return namespace + "/" + ref.Name
}
