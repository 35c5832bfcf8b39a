package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

func newTestFetcher(t *testing.T) *Fetcher {
	t.Helper()
	f, err := NewFetcher(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// readTree returns the files under dir (slash path -> content; symlinks as
// "-> target").
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if e.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			files[filepath.ToSlash(rel)] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// expectArtifact checks the fields that hold for every fetched artifact.
func expectArtifact(g *WithT, a *Artifact, revision, commit string) {
	g.ExpectWithOffset(1, a.Revision).To(Equal(revision))
	g.ExpectWithOffset(1, a.Commit).To(Equal(commit))
	g.ExpectWithOffset(1, a.Digest).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.ExpectWithOffset(1, filepath.IsAbs(a.Dir)).To(BeTrue())
	d, err := DirDigest(a.Dir)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, d).To(Equal(a.Digest), "digest computed at checkout must match the files on disk")
	_, err = os.Stat(filepath.Join(a.Dir, ".git"))
	g.ExpectWithOffset(1, os.IsNotExist(err)).To(BeTrue(), "checkout must not contain .git")
}

func TestFetchRefs(t *testing.T) {
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("refs")
	c1 := repo.Commit("main", "one", map[string]string{"app.yaml": "v: 1"})
	repo.Tag("v0.9.0", c1, false)
	c2 := repo.Commit("main", "two", map[string]string{"app.yaml": "v: 2"})
	repo.Tag("v1.0.0", c2, false)
	c3 := repo.Commit("main", "three", map[string]string{"app.yaml": "v: 3"})
	repo.Tag("v1.2.0", c3, true)
	repo.Tag("release", c2, true)
	repo.Tag("not-semver", c3, false)
	c4 := repo.Commit("main", "four", map[string]string{"app.yaml": "v: 4"})
	repo.Tag("v2.0.0", c4, false)
	f1 := repo.Commit("feature", "feature", map[string]string{"app.yaml": "v: feature"})
	url := srv.HTTPURL("refs")

	tests := []struct {
		name     string
		ref      Ref
		revision string
		commit   string
		content  string
	}{
		{name: "branch", ref: Ref{Branch: "main"}, revision: "main@sha1:" + c4, commit: c4, content: "v: 4"},
		{name: "other branch", ref: Ref{Branch: "feature"}, revision: "feature@sha1:" + f1, commit: f1, content: "v: feature"},
		{name: "lightweight tag", ref: Ref{Tag: "v1.0.0"}, revision: "v1.0.0@sha1:" + c2, commit: c2, content: "v: 2"},
		{name: "annotated tag", ref: Ref{Tag: "release"}, revision: "release@sha1:" + c2, commit: c2, content: "v: 2"},
		{name: "semver range", ref: Ref{SemVer: ">=1.0.0 <2.0.0"}, revision: "v1.2.0@sha1:" + c3, commit: c3, content: "v: 3"},
		{name: "semver any", ref: Ref{SemVer: "*"}, revision: "v2.0.0@sha1:" + c4, commit: c4, content: "v: 4"},
		{name: "commit in branch", ref: Ref{Branch: "main", Commit: c2}, revision: "main@sha1:" + c2, commit: c2, content: "v: 2"},
		{name: "commit at branch tip", ref: Ref{Branch: "main", Commit: c4}, revision: "main@sha1:" + c4, commit: c4, content: "v: 4"},
		{name: "commit without branch", ref: Ref{Commit: c1}, revision: "sha1:" + c1, commit: c1, content: "v: 1"},
		{name: "default branch", ref: Ref{}, revision: "main@sha1:" + c4, commit: c4, content: "v: 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: url, Ref: tt.ref})
			g.Expect(err).NotTo(HaveOccurred())
			expectArtifact(g, a, tt.revision, tt.commit)
			g.Expect(a.Fetched).To(BeTrue())
			g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"app.yaml": tt.content}))
		})
	}

	t.Run("default branch follows HEAD", func(t *testing.T) {
		g := NewWithT(t)
		d1 := repo.Commit("develop", "develop", map[string]string{"app.yaml": "v: develop"})
		repo.SetDefaultBranch("develop")
		a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: url})
		g.Expect(err).NotTo(HaveOccurred())
		expectArtifact(g, a, "develop@sha1:"+d1, d1)
		g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"app.yaml": "v: develop"}))
	})

	t.Run("file url", func(t *testing.T) {
		g := NewWithT(t)
		a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: "file://" + repo.Path(), Ref: Ref{Tag: "release"}})
		g.Expect(err).NotTo(HaveOccurred())
		expectArtifact(g, a, "release@sha1:"+c2, c2)
	})

	t.Run("commit not in branch", func(t *testing.T) {
		g := NewWithT(t)
		_, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: url, Ref: Ref{Branch: "main", Commit: f1}})
		g.Expect(errors.Is(err, ErrRefNotFound)).To(BeTrue(), "error: %v", err)
		g.Expect(err.Error()).To(ContainSubstring(f1))
	})
}

func TestFetchSkipsUnchangedCommit(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("poll")
	c1 := repo.Commit("main", "one", map[string]string{"a.yaml": "1"})
	f := newTestFetcher(t)
	req := Request{URL: srv.HTTPURL("poll"), Ref: Ref{Branch: "main"}}

	first, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Fetched).To(BeTrue())
	g.Expect(srv.Counts("poll")).To(Equal(gittest.Counts{RefListings: 1, Fetches: 1}))

	srv.ResetCounts()
	req.Current = first
	second, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Fetched).To(BeFalse())
	g.Expect(*second).To(Equal(Artifact{Revision: first.Revision, Commit: c1, Digest: first.Digest, Dir: first.Dir}))
	g.Expect(srv.Counts("poll")).To(Equal(gittest.Counts{RefListings: 1, Fetches: 0}))

	srv.ResetCounts()
	c2 := repo.Commit("main", "two", map[string]string{"a.yaml": "2"})
	req.Current = second
	third, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.Fetched).To(BeTrue())
	expectArtifact(g, third, "main@sha1:"+c2, c2)
	g.Expect(third.Dir).NotTo(Equal(first.Dir))
	g.Expect(third.Digest).NotTo(Equal(first.Digest))
	g.Expect(srv.Counts("poll")).To(Equal(gittest.Counts{RefListings: 1, Fetches: 1}))

	// The old checkout is untouched (a reader may still use it).
	g.Expect(readTree(t, first.Dir)).To(Equal(map[string]string{"a.yaml": "1"}))
}

func TestFetchReusesCheckoutFromAnotherRepository(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	// gittest commits with fixed dates and authors, so equal changes give
	// equal commits: the second repository is a mirror of the first.
	a := srv.CreateRepo("origin").Commit("main", "same", map[string]string{"x.yaml": "x"})
	b := srv.CreateRepo("mirror").Commit("main", "same", map[string]string{"x.yaml": "x"})
	g.Expect(b).To(Equal(a))

	f := newTestFetcher(t)
	first, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("origin")})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("mirror"), Ref: Ref{Branch: "main"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Fetched).To(BeFalse())
	g.Expect(second.Dir).To(Equal(first.Dir))
	g.Expect(second.Digest).To(Equal(first.Digest))
	g.Expect(srv.Counts("mirror")).To(Equal(gittest.Counts{RefListings: 1, Fetches: 0}))

	// A lost digest record is recomputed from the files.
	g.Expect(os.Remove(first.Dir + digestSuffix)).To(Succeed())
	third, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("mirror")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.Digest).To(Equal(first.Digest))
	g.Expect(first.Dir + digestSuffix).To(BeAnExistingFile())
}

func TestFetchErrors(t *testing.T) {
	const password = "correct-horse-battery"
	const wrongPassword = "wrong-horse-staple-42"
	srv := gittest.NewServer(t, gittest.Options{Username: "gitsync", Password: password})
	srv.CreateRepo("private").Commit("main", "one", map[string]string{"a.yaml": "1"})
	srv.CreateRepo("empty")

	tests := []struct {
		name      string
		req       Request
		sentinel  error // nil: a fetch failure, none of the sentinels
		contains  string
		forbidden string
	}{
		{name: "wrong password",
			req:      Request{URL: srv.HTTPURL("private"), Auth: &Auth{Username: "gitsync", Password: wrongPassword}},
			sentinel: ErrAuthentication, forbidden: wrongPassword},
		{name: "password in the url", // refused: credentials belong in spec.secretRef
			req:      Request{URL: strings.Replace(srv.HTTPURL("private"), "http://", "http://gitsync:"+wrongPassword+"@", 1)},
			sentinel: ErrURLInvalid, forbidden: wrongPassword},
		{name: "no credentials",
			req:      Request{URL: srv.HTTPURL("private")},
			sentinel: ErrAuthentication},
		{name: "bearer token refused",
			req:      Request{URL: srv.HTTPURL("private"), Auth: &Auth{BearerToken: wrongPassword}},
			sentinel: ErrAuthentication, forbidden: wrongPassword},
		{name: "missing branch",
			req:      Request{URL: srv.HTTPURL("private"), Ref: Ref{Branch: "nope"}, Auth: &Auth{Username: "gitsync", Password: password}},
			sentinel: ErrRefNotFound, contains: `branch "nope"`, forbidden: password},
		{name: "missing tag",
			req:      Request{URL: srv.HTTPURL("private"), Ref: Ref{Tag: "v9"}, Auth: &Auth{Username: "gitsync", Password: password}},
			sentinel: ErrRefNotFound, contains: `tag "v9"`},
		{name: "no semver match",
			req:      Request{URL: srv.HTTPURL("private"), Ref: Ref{SemVer: ">=1"}, Auth: &Auth{Username: "gitsync", Password: password}},
			sentinel: ErrRefNotFound, contains: `">=1"`},
		{name: "missing commit",
			req:      Request{URL: srv.HTTPURL("private"), Ref: Ref{Commit: strings.Repeat("0", 40)}, Auth: &Auth{Username: "gitsync", Password: password}},
			sentinel: ErrRefNotFound, contains: strings.Repeat("0", 40)},
		{name: "empty repository",
			req:      Request{URL: srv.HTTPURL("empty"), Auth: &Auth{Username: "gitsync", Password: password}},
			sentinel: ErrRefNotFound},
		{name: "bad url", req: Request{URL: "http://[::1"}, sentinel: ErrURLInvalid},
		{name: "bad url with password", req: Request{URL: "http://u:" + wrongPassword + "@[::1"}, sentinel: ErrURLInvalid, forbidden: wrongPassword},
		{name: "unsupported scheme", req: Request{URL: "ftp://example.com/repo.git"}, sentinel: ErrURLInvalid},
		{name: "bad ref", req: Request{URL: srv.HTTPURL("private"), Ref: Ref{Branch: "a", Tag: "b"}}, sentinel: ErrRefInvalid},
		{name: "repository not found",
			req:      Request{URL: srv.HTTPURL("absent"), Auth: &Auth{Username: "gitsync", Password: password}},
			contains: "repository not found", forbidden: password},
		{name: "ssh without known_hosts",
			req:      Request{URL: srv.SSHURL("private"), Auth: &Auth{Identity: srv.ClientIdentity()}},
			sentinel: ErrAuthentication, contains: "known_hosts"},
		{name: "ssh anonymous", req: Request{URL: srv.SSHURL("private")}, sentinel: ErrAuthentication},
	}
	sentinels := []error{ErrAuthentication, ErrRefNotFound, ErrURLInvalid, ErrRefInvalid}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, err := newTestFetcher(t).Fetch(context.Background(), tt.req)
			g.Expect(err).To(HaveOccurred())
			g.Expect(a).To(BeNil())
			for _, s := range sentinels {
				g.Expect(errors.Is(err, s)).To(Equal(s == tt.sentinel), "errors.Is(%v): %v", s, err)
			}
			if tt.contains != "" {
				g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			}
			if tt.forbidden != "" {
				g.Expect(err.Error()).NotTo(ContainSubstring(tt.forbidden))
			}
		})
	}

	t.Run("right password", func(t *testing.T) {
		g := NewWithT(t)
		a, err := newTestFetcher(t).Fetch(context.Background(), Request{
			URL: srv.HTTPURL("private"), Auth: &Auth{Username: "gitsync", Password: password},
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "1"}))
	})
}

func TestFetchSSH(t *testing.T) {
	srv := gittest.NewServer(t, gittest.Options{})
	c := srv.CreateRepo("ssh").Commit("main", "one", map[string]string{"a.yaml": "1"})
	sshURL := srv.SSHURL("ssh")
	// scp-like form of the same repository: git@127.0.0.1:PORT/ssh.git
	scpURL := strings.Replace(strings.TrimPrefix(sshURL, "ssh://"), "/", ":", 1)
	hostPort := strings.TrimSuffix(strings.SplitN(strings.TrimPrefix(sshURL, "ssh://git@"), "/", 2)[0], "/")

	_, otherHostKey := generateSSHKey(t)
	otherKnownHosts := []byte(knownhosts.Line([]string{hostPort}, otherHostKey) + "\n")
	otherIdentity, _ := generateSSHKey(t)

	tests := []struct {
		name     string
		url      string
		auth     *Auth
		sentinel error
	}{
		{name: "ssh url", url: sshURL, auth: &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}},
		{name: "scp-like url", url: scpURL, auth: &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}},
		{name: "known_hosts with another key", url: sshURL,
			auth: &Auth{Identity: srv.ClientIdentity(), KnownHosts: otherKnownHosts}, sentinel: ErrAuthentication},
		{name: "known_hosts for another host", url: sshURL,
			auth:     &Auth{Identity: srv.ClientIdentity(), KnownHosts: []byte(knownhosts.Line([]string{"example.com"}, otherHostKey) + "\n")},
			sentinel: ErrAuthentication},
		{name: "identity not authorized", url: sshURL,
			auth: &Auth{Identity: otherIdentity, KnownHosts: srv.KnownHosts()}, sentinel: ErrAuthentication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: tt.url, Auth: tt.auth, Timeout: 10 * time.Second})
			if tt.sentinel != nil {
				g.Expect(errors.Is(err, tt.sentinel)).To(BeTrue(), "error: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			expectArtifact(g, a, "main@sha1:"+c, c)
			g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "1"}))
		})
	}

	t.Run("tag and older commit", func(t *testing.T) {
		g := NewWithT(t)
		repo := srv.CreateRepo("ssh-refs")
		c1 := repo.Commit("main", "one", map[string]string{"a.yaml": "1"})
		repo.Tag("v1.0.0", c1, true)
		repo.Commit("main", "two", map[string]string{"a.yaml": "2"})
		auth := &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}
		for ref, revision := range map[Ref]string{
			{SemVer: "1.x"}:              "v1.0.0@sha1:" + c1,
			{Branch: "main", Commit: c1}: "main@sha1:" + c1,
		} {
			a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: srv.SSHURL("ssh-refs"), Ref: ref, Auth: auth})
			g.Expect(err).NotTo(HaveOccurred())
			expectArtifact(g, a, revision, c1)
		}
	})

	t.Run("no fetch when unchanged", func(t *testing.T) {
		g := NewWithT(t)
		f := newTestFetcher(t)
		req := Request{URL: sshURL, Auth: &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}}
		first, err := f.Fetch(context.Background(), req)
		g.Expect(err).NotTo(HaveOccurred())
		srv.ResetCounts()
		req.Current = first
		second, err := f.Fetch(context.Background(), req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second.Fetched).To(BeFalse())
		g.Expect(srv.Counts("ssh")).To(Equal(gittest.Counts{RefListings: 1, Fetches: 0}))
	})
}

// generateSSHKey returns a new ed25519 private key as PEM and its public key.
func generateSSHKey(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	pemBytes, pub := testIdentity(t)
	return pemBytes, pub
}

func TestFetchIgnore(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	files := map[string]string{
		"README.md":             "readme",
		"docs/guide.md":         "guide",
		"secret/key.txt":        "key",
		"nested/secret/ok.yaml": "nested",
		"app/deploy.yaml":       "deploy",
	}
	commit := srv.CreateRepo("ignore").Commit("main", "files", files)
	srv.CreateRepo("ignore-copy").Commit("main", "files", files)
	ignore := []string{"*.md", "/secret/"}

	f := newTestFetcher(t)
	plain, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("ignore")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, plain.Dir)).To(Equal(files))

	filtered, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("ignore"), Ignore: ignore, Current: plain})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filtered.Fetched).To(BeTrue(), "other ignore lines are another checkout")
	expectArtifact(g, filtered, "main@sha1:"+commit, commit)
	g.Expect(readTree(t, filtered.Dir)).To(Equal(map[string]string{
		"nested/secret/ok.yaml": "nested",
		"app/deploy.yaml":       "deploy",
	}))
	g.Expect(filtered.Digest).NotTo(Equal(plain.Digest))
	g.Expect(filepath.Base(filtered.Dir)).To(Equal(DirName("", commit, ignore)))
	g.Expect(filepath.Base(plain.Dir)).To(Equal(commit))

	// Same content and ignore lines elsewhere: same digest.
	other, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: srv.HTTPURL("ignore-copy"), Ignore: []string{"# same\n*.md\n/secret/"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Digest).To(Equal(filtered.Digest))
	g.Expect(filepath.Base(other.Dir)).To(Equal(filepath.Base(filtered.Dir)))
}

func TestFetchFileModes(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	commit := srv.CreateRepo("modes").CommitFunc("main", "modes", func(wt string) {
		must(t, os.WriteFile(filepath.Join(wt, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
		must(t, os.MkdirAll(filepath.Join(wt, "base"), 0o755))
		must(t, os.WriteFile(filepath.Join(wt, "base", "a.yaml"), []byte("a"), 0o644))
		must(t, os.Symlink("base/a.yaml", filepath.Join(wt, "link.yaml")))
		must(t, os.Symlink("../../etc/passwd", filepath.Join(wt, "outside")))
	})
	a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: srv.HTTPURL("modes")})
	g.Expect(err).NotTo(HaveOccurred())
	expectArtifact(g, a, "main@sha1:"+commit, commit)
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{
		"run.sh":      "#!/bin/sh\n",
		"base/a.yaml": "a",
		"link.yaml":   "-> base/a.yaml",
		"outside":     "-> ../../etc/passwd",
	}))
	info, err := os.Stat(filepath.Join(a.Dir, "run.sh"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm() & 0o100).NotTo(BeZero())
	info, err = os.Stat(filepath.Join(a.Dir, "base", "a.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm() & 0o111).To(BeZero())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFetchServerDown(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	c := srv.CreateRepo("down").Commit("main", "one", map[string]string{"a.yaml": "1"})
	f := newTestFetcher(t)
	req := Request{URL: srv.HTTPURL("down"), Timeout: 5 * time.Second}

	srv.Stop()
	_, err := f.Fetch(context.Background(), req)
	g.Expect(err).To(HaveOccurred())
	for _, s := range []error{ErrAuthentication, ErrRefNotFound, ErrURLInvalid, ErrRefInvalid} {
		g.Expect(errors.Is(err, s)).To(BeFalse(), "errors.Is(%v): %v", s, err)
	}

	srv.Start()
	a, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	expectArtifact(g, a, "main@sha1:"+c, c)
}

func TestFetchTimeout(t *testing.T) {
	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("slow").Commit("main", "one", map[string]string{"a.yaml": "1"})
	for name, url := range map[string]string{"http": srv.HTTPURL("slow"), "ssh": srv.SSHURL("slow")} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			_, err := newTestFetcher(t).Fetch(context.Background(), Request{
				URL:     url,
				Auth:    &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()},
				Timeout: time.Nanosecond,
			})
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "error: %v", err)
			g.Expect(errors.Is(err, ErrAuthentication)).To(BeFalse(), "error: %v", err)
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		})
	}
}

func TestFetchConcurrent(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	c1 := srv.CreateRepo("one").Commit("main", "one", map[string]string{"a.yaml": "1"})
	c2 := srv.CreateRepo("two").Commit("main", "two", map[string]string{"b.yaml": "2"})
	f := newTestFetcher(t)

	const perRepo = 6
	var wg sync.WaitGroup
	results := make([]*Artifact, 2*perRepo)
	errs := make([]error, 2*perRepo)
	for i := range results {
		wg.Go(func() {
			repo := []string{"one", "two"}[i%2]
			results[i], errs[i] = f.Fetch(context.Background(), Request{URL: srv.HTTPURL(repo)})
		})
	}
	wg.Wait()
	for i, a := range results {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		want := map[bool]string{true: c1, false: c2}[i%2 == 0]
		expectArtifact(g, a, "main@sha1:"+want, want)
		g.Expect(a.Dir).To(Equal(results[i%2].Dir))
	}
	entries, err := os.ReadDir(f.dir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	g.Expect(names).To(ConsistOf(c1, c1+digestSuffix, c2, c2+digestSuffix), "no temporary leftovers")
}

func TestGC(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("gc")
	repo.Commit("main", "one", map[string]string{"a.yaml": "1"})
	f := newTestFetcher(t)
	old, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("gc")})
	g.Expect(err).NotTo(HaveOccurred())
	repo.Commit("main", "two", map[string]string{"a.yaml": "2"})
	cur, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("gc"), Current: old})
	g.Expect(err).NotTo(HaveOccurred())
	filtered, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("gc"), Ignore: []string{"*.md"}})
	g.Expect(err).NotTo(HaveOccurred())

	staleTmp := filepath.Join(f.dir, tmpPrefix+"checkout-stale")
	freshTmp := filepath.Join(f.dir, tmpPrefix+"checkout-fresh")
	g.Expect(os.Mkdir(staleTmp, 0o755)).To(Succeed())
	g.Expect(os.Mkdir(freshTmp, 0o755)).To(Succeed())
	busyTmp := filepath.Join(f.dir, tmpPrefix+"checkout-busy")
	g.Expect(os.Mkdir(busyTmp, 0o755)).To(Succeed())
	longAgo := time.Now().Add(-time.Hour)
	g.Expect(os.Chtimes(staleTmp, longAgo, longAgo)).To(Succeed())
	g.Expect(os.Chtimes(busyTmp, longAgo, longAgo)).To(Succeed())
	f.setWriting(busyTmp, true) // a slow checkout in progress

	removed, err := f.GC(map[string]bool{
		filepath.Base(cur.Dir):                    true,
		DirName("", cur.Commit, []string{"*.md"}): true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal(1))
	g.Expect(old.Dir).NotTo(BeADirectory())
	g.Expect(old.Dir + digestSuffix).NotTo(BeAnExistingFile())
	g.Expect(cur.Dir).To(BeADirectory())
	g.Expect(cur.Dir + digestSuffix).To(BeAnExistingFile())
	g.Expect(filtered.Dir).To(BeADirectory())
	g.Expect(staleTmp).NotTo(BeADirectory())
	g.Expect(freshTmp).To(BeADirectory())
	g.Expect(busyTmp).To(BeADirectory())

	// A collected commit is fetched again when asked for.
	again, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("gc"), Ref: Ref{Commit: old.Commit}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Fetched).To(BeTrue())
	g.Expect(again.Digest).To(Equal(old.Digest))

	removed, err = f.GC(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal(3))
}

// A checkout that a build has acquired survives GC until it is released.
func TestGCKeepsAcquiredCheckout(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("busy").Commit("main", "one", map[string]string{"a.yaml": "1"})
	f := newTestFetcher(t)
	a, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("busy")})
	g.Expect(err).NotTo(HaveOccurred())

	release := f.Acquire(f.CheckoutDir("", a.Commit, nil))
	again := f.Acquire(a.Dir) // nested
	removed, err := f.GC(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal(0))
	g.Expect(a.Dir).To(BeADirectory())
	g.Expect(a.Dir + digestSuffix).To(BeAnExistingFile())

	release()
	release() // idempotent: the nested acquire still holds it
	_, err = f.GC(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Dir).To(BeADirectory())

	again()
	removed, err = f.GC(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal(1))
	g.Expect(a.Dir).NotTo(BeADirectory())
	g.Expect(a.Dir + digestSuffix).NotTo(BeAnExistingFile())
}

func TestFetchLinksUnchangedFiles(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("links")
	repo.CommitFunc("main", "one", func(wt string) {
		must(t, os.WriteFile(filepath.Join(wt, "same.yaml"), []byte("same"), 0o644))
		must(t, os.WriteFile(filepath.Join(wt, "changed.yaml"), []byte("old"), 0o644))
		must(t, os.WriteFile(filepath.Join(wt, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	})
	f := newTestFetcher(t)
	req := Request{URL: srv.HTTPURL("links")}
	first, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())

	c2 := repo.CommitFunc("main", "two", func(wt string) {
		must(t, os.WriteFile(filepath.Join(wt, "changed.yaml"), []byte("new"), 0o644))
		// Same content as run.sh but not executable: must not share its inode.
		must(t, os.WriteFile(filepath.Join(wt, "copy.sh"), []byte("#!/bin/sh\n"), 0o644))
		must(t, os.MkdirAll(filepath.Join(wt, "moved"), 0o755))
		must(t, os.WriteFile(filepath.Join(wt, "moved", "same-copy.yaml"), []byte("same"), 0o644))
	})
	req.Current = first
	second, err := f.Fetch(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	expectArtifact(g, second, "main@sha1:"+c2, c2)

	sameFile := func(rel1, rel2 string) bool {
		a, err := os.Stat(filepath.Join(first.Dir, rel1))
		g.Expect(err).NotTo(HaveOccurred())
		b, err := os.Stat(filepath.Join(second.Dir, rel2))
		g.Expect(err).NotTo(HaveOccurred())
		return os.SameFile(a, b)
	}
	g.Expect(sameFile("same.yaml", "same.yaml")).To(BeTrue())
	g.Expect(sameFile("same.yaml", "moved/same-copy.yaml")).To(BeTrue())
	g.Expect(sameFile("run.sh", "run.sh")).To(BeTrue())
	g.Expect(sameFile("changed.yaml", "changed.yaml")).To(BeFalse())
	g.Expect(sameFile("run.sh", "copy.sh")).To(BeFalse())
	info, err := os.Stat(filepath.Join(second.Dir, "copy.sh"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm() & 0o111).To(BeZero())
	g.Expect(readTree(t, first.Dir)).To(HaveKeyWithValue("changed.yaml", "old"))

	// With the earlier checkout collected, files are written, not linked.
	c3 := repo.Commit("main", "three", map[string]string{"changed.yaml": "newer"})
	_, err = f.GC(map[string]bool{filepath.Base(second.Dir): true})
	g.Expect(err).NotTo(HaveOccurred())
	third, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("links"), Current: first})
	g.Expect(err).NotTo(HaveOccurred())
	expectArtifact(g, third, "main@sha1:"+c3, c3)
	g.Expect(readTree(t, third.Dir)).To(HaveKeyWithValue("same.yaml", "same"))
}

// A caller that keeps only status fields (revision, commit, digest; no Dir) gets the same
// shortcut and the same linking of unchanged files.
func TestFetchCurrentWithoutDir(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("status")
	repo.Commit("main", "one", map[string]string{"same.yaml": "same", "changed.yaml": "old"})
	f := newTestFetcher(t)
	first, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("status")})
	g.Expect(err).NotTo(HaveOccurred())
	fromStatus := func(a *Artifact) *Artifact {
		return &Artifact{Revision: a.Revision, Commit: a.Commit, Digest: a.Digest}
	}

	again, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("status"), Current: fromStatus(first)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Fetched).To(BeFalse())
	g.Expect(again.Dir).To(Equal(first.Dir))
	g.Expect(srv.Counts("status").Fetches).To(Equal(1))

	repo.Commit("main", "two", map[string]string{"changed.yaml": "new"})
	second, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("status"), Current: fromStatus(first)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Fetched).To(BeTrue())
	a, err := os.Stat(filepath.Join(first.Dir, "same.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	b, err := os.Stat(filepath.Join(second.Dir, "same.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.SameFile(a, b)).To(BeTrue())
}
