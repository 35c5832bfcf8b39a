package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

// TestFetchSignedObjects: with Request.Signatures the artifact carries the commit (and
// annotated tag) objects as fetched, on a fetch and on every reuse of the checkout, and
// a checkout stored without them is fetched again; GC removes their record.
func TestFetchSignedObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := signing.SSH(t, "ci@example.com")
	keys, err := verify.ParseGitKeys(map[string][]byte{"allowed_signers": key.Public})
	g.Expect(err).NotTo(HaveOccurred())

	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("signed")
	repo.Commit("main", "base", map[string]string{"app.yaml": "v: 1"})
	signed := signing.CommitOnBranch(t, repo.Path(), "main", key, "signed\n")
	tag := signing.TagAt(t, repo.Path(), "v1.0.0", signed, key)

	f := newTestFetcher(t)
	req := Request{URL: srv.HTTPURL("signed"), Key: "k", Signatures: true}
	objs := func(a *Artifact) verify.GitObjects {
		g.Expect(a.Signed).NotTo(BeNil())
		return verify.GitObjects{CommitID: a.Signed.CommitID, Commit: a.Signed.Commit, TagID: a.Signed.TagID, Tag: a.Signed.Tag}
	}

	// Stored first without signatures: the next fetch with them goes to the remote once.
	plain, err := f.Fetch(ctx, Request{URL: req.URL, Key: "k"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain.Signed).To(BeNil())
	a, err := f.Fetch(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Commit).To(Equal(signed))
	g.Expect(verify.Git(objs(a), verify.ModeHEAD, keys)).To(HaveLen(1))

	srv.ResetCounts()
	again, err := f.Fetch(ctx, Request{URL: req.URL, Key: "k", Signatures: true, Current: a})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Fetched).To(BeFalse())
	g.Expect(srv.Counts("signed").Fetches).To(BeZero(), "a reused checkout needs no fetch for its signatures")
	g.Expect(verify.Git(objs(again), verify.ModeHEAD, keys)).To(HaveLen(1))

	// The annotated tag of the same commit: its object comes with it.
	tagged, err := f.Fetch(ctx, Request{URL: req.URL, Key: "k", Signatures: true, Ref: Ref{Tag: "v1.0.0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tagged.Signed.TagID).To(Equal(tag))
	g.Expect(verify.Git(objs(tagged), verify.ModeTagAndHEAD, keys)).To(HaveLen(2))

	// GC removes the record with its checkout.
	_, err = f.GC(nil)
	g.Expect(err).NotTo(HaveOccurred())
	left, err := filepath.Glob(filepath.Join(f.dir, "*"+signedSuffix))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty())
	_, err = os.Stat(a.Dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}
