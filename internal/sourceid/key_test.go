package sourceid

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// commit is the commit every checkout below is of (upper case: DirName lowers it).
const commit = "0123456789ABCDEF0123456789abcdef01234567"

// The keys checkouts and chart archives are stored under never change: a storage volume
// (and a shard's replicas) written by an older operator must be found by a newer one. The
// expected values are what render.RepositoryKey, source.DirName and render.ChartKey gave
// before they moved here.
func TestKeysAreStable(t *testing.T) {
	for _, c := range []struct{ url, secret, ignore, key, dir string }{
		{"https://github.com/example/repo", "", "", "d087a4eb17e43b42", "d087a4eb17e43b42-0123456789abcdef0123456789abcdef01234567"},
		{"https://github.com/example/repo", "", "/docs\n*.md", "d087a4eb17e43b42", "d087a4eb17e43b42-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"https://github.com/example/repo", "creds", "", "181fcebf85bf4cf8", "181fcebf85bf4cf8-0123456789abcdef0123456789abcdef01234567"},
		{"https://github.com/example/repo", "creds", "/docs\n*.md", "181fcebf85bf4cf8", "181fcebf85bf4cf8-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"https://github.com/example/repo.git", "", "", "ffc26b0eb9c65e86", "ffc26b0eb9c65e86-0123456789abcdef0123456789abcdef01234567"},
		{"https://github.com/example/repo.git", "", "/docs\n*.md", "ffc26b0eb9c65e86", "ffc26b0eb9c65e86-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"https://github.com/example/repo.git", "creds", "", "e16489601a2bb9ee", "e16489601a2bb9ee-0123456789abcdef0123456789abcdef01234567"},
		{"https://github.com/example/repo.git", "creds", "/docs\n*.md", "e16489601a2bb9ee", "e16489601a2bb9ee-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"https://GitHub.com:443/example/repo/", "", "", "d087a4eb17e43b42", "d087a4eb17e43b42-0123456789abcdef0123456789abcdef01234567"},
		{"https://GitHub.com:443/example/repo/", "", "/docs\n*.md", "d087a4eb17e43b42", "d087a4eb17e43b42-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"https://GitHub.com:443/example/repo/", "creds", "", "181fcebf85bf4cf8", "181fcebf85bf4cf8-0123456789abcdef0123456789abcdef01234567"},
		{"https://GitHub.com:443/example/repo/", "creds", "/docs\n*.md", "181fcebf85bf4cf8", "181fcebf85bf4cf8-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"ssh://git@github.com/example/repo", "", "", "2aafaffdc21d8afa", "2aafaffdc21d8afa-0123456789abcdef0123456789abcdef01234567"},
		{"ssh://git@github.com/example/repo", "", "/docs\n*.md", "2aafaffdc21d8afa", "2aafaffdc21d8afa-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"ssh://git@github.com/example/repo", "creds", "", "e916cf57f71c8c03", "e916cf57f71c8c03-0123456789abcdef0123456789abcdef01234567"},
		{"ssh://git@github.com/example/repo", "creds", "/docs\n*.md", "e916cf57f71c8c03", "e916cf57f71c8c03-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"git@github.com:example/repo.git", "", "", "a5b4d952fd22af49", "a5b4d952fd22af49-0123456789abcdef0123456789abcdef01234567"},
		{"git@github.com:example/repo.git", "", "/docs\n*.md", "a5b4d952fd22af49", "a5b4d952fd22af49-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"git@github.com:example/repo.git", "creds", "", "1e02f6c05ee04daa", "1e02f6c05ee04daa-0123456789abcdef0123456789abcdef01234567"},
		{"git@github.com:example/repo.git", "creds", "/docs\n*.md", "1e02f6c05ee04daa", "1e02f6c05ee04daa-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"http://127.0.0.1:8080/docs", "", "", "94cefee60e15c519", "94cefee60e15c519-0123456789abcdef0123456789abcdef01234567"},
		{"http://127.0.0.1:8080/docs", "", "/docs\n*.md", "94cefee60e15c519", "94cefee60e15c519-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"http://127.0.0.1:8080/docs", "creds", "", "9bb6dc46a0fc2e40", "9bb6dc46a0fc2e40-0123456789abcdef0123456789abcdef01234567"},
		{"http://127.0.0.1:8080/docs", "creds", "/docs\n*.md", "9bb6dc46a0fc2e40", "9bb6dc46a0fc2e40-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"not a url", "", "", "b461a188ceff842c", "b461a188ceff842c-0123456789abcdef0123456789abcdef01234567"},
		{"not a url", "", "/docs\n*.md", "b461a188ceff842c", "b461a188ceff842c-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
		{"not a url", "creds", "", "cc64774c3922dc52", "cc64774c3922dc52-0123456789abcdef0123456789abcdef01234567"},
		{"not a url", "creds", "/docs\n*.md", "cc64774c3922dc52", "cc64774c3922dc52-0123456789abcdef0123456789abcdef01234567-523484bd815f"},
	} {
		repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "r"},
			Spec: gitsyncv1.GitRepositorySpec{URL: c.url, Ignore: c.ignore}}
		if c.secret != "" {
			repo.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: c.secret}
		}
		if got := RepositoryKey(repo); got != c.key {
			t.Errorf("RepositoryKey(%q, secret %q) = %q, want %q", c.url, c.secret, got, c.key)
		}
		if got := DirName(repo, commit); got != c.dir {
			t.Errorf("DirName(%q, secret %q, ignore %q) = %q, want %q", c.url, c.secret, c.ignore, got, c.dir)
		}
	}
	for _, c := range []struct{ url, secret, key string }{
		{"https://github.com/example/repo", "", "https://github.com/example/repo\x00"},
		{"https://github.com/example/repo", "creds", "https://github.com/example/repo\x00team-a/creds"},
		{"https://github.com/example/repo.git", "", "https://github.com/example/repo.git\x00"},
		{"https://github.com/example/repo.git", "creds", "https://github.com/example/repo.git\x00team-a/creds"},
		{"https://GitHub.com:443/example/repo/", "", "https://GitHub.com:443/example/repo\x00"},
		{"https://GitHub.com:443/example/repo/", "creds", "https://GitHub.com:443/example/repo\x00team-a/creds"},
		{"ssh://git@github.com/example/repo", "", "ssh://git@github.com/example/repo\x00"},
		{"ssh://git@github.com/example/repo", "creds", "ssh://git@github.com/example/repo\x00team-a/creds"},
		{"git@github.com:example/repo.git", "", "git@github.com:example/repo.git\x00"},
		{"git@github.com:example/repo.git", "creds", "git@github.com:example/repo.git\x00team-a/creds"},
		{"http://127.0.0.1:8080/docs", "", "http://127.0.0.1:8080/docs\x00"},
		{"http://127.0.0.1:8080/docs", "creds", "http://127.0.0.1:8080/docs\x00team-a/creds"},
		{"not a url", "", "not a url\x00"},
		{"not a url", "creds", "not a url\x00team-a/creds"},
	} {
		repo := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "h"}, Spec: gitsyncv1.HelmRepositorySpec{URL: c.url}}
		if c.secret != "" {
			repo.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: c.secret}
		}
		if got := ChartKey(repo); got != c.key {
			t.Errorf("ChartKey(%q, secret %q) = %q, want %q", c.url, c.secret, got, c.key)
		}
	}
}

// CheckoutDir is the fetcher's directory of DirName, and what the fetcher reads for
// the repository's key and spec.ignore.
func TestCheckoutDir(t *testing.T) {
	g := NewWithT(t)
	storage := t.TempDir()
	fetcher, err := source.NewFetcher(storage)
	g.Expect(err).NotTo(HaveOccurred())
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "r"},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://github.com/example/repo", Ignore: "/docs", SecretRef: &gitsyncv1.LocalObjectReference{Name: "creds"}}}
	dir := CheckoutDir(fetcher, repo, commit)
	g.Expect(filepath.Base(dir)).To(Equal(DirName(repo, commit)))
	g.Expect(dir).To(Equal(fetcher.CheckoutDir(RepositoryKey(repo), commit, []string{"/docs"})))
	g.Expect(IgnoreLines("")).To(BeNil())
}

func TestKey(t *testing.T) {
	g := NewWithT(t)
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Name: "repo"}}}
	g.Expect(Key(app)).To(Equal(types.NamespacedName{Namespace: "team-a", Name: "repo"}))
	app.Spec.SourceRef.Namespace = "shared"
	g.Expect(Key(app)).To(Equal(types.NamespacedName{Namespace: "shared", Name: "repo"}))
	g.Expect(ChartRevision("web", "1.2.3")).To(Equal("web@1.2.3"))
}
