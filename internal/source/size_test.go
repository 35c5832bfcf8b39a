package source

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// pinnedRepo has a 2 MiB random blob in its first commit only, and returns the
// commit below the tip that a test pins (whose tree is small).
func pinnedRepo(t *testing.T, srv *gittest.Server, name string) (repo *gittest.Repo, pinned string) {
	t.Helper()
	big := make([]byte, 2<<20)
	_, _ = rand.Read(big)
	repo = srv.CreateRepo(name)
	repo.Commit("main", "big", map[string]string{"big.bin": string(big), "a.yaml": "v: 1"})
	repo.Commit("main", "drop big", map[string]string{"a.yaml": "v: 2"}, "big.bin")
	pinned = repo.Commit("main", "pinned", map[string]string{"a.yaml": "v: 3"})
	repo.Commit("main", "tip", map[string]string{"a.yaml": "v: 4"})
	return repo, pinned
}

// More bytes to fetch than Request.MaxSize is ErrTooLarge, saying so, and leaves
// nothing behind in the storage.
func TestFetchMaxSize(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	_, pinned := pinnedRepo(t, srv, "big")
	f := newTestFetcher(t)

	// Without fetch-by-id the pinned commit needs the whole history (2 MiB).
	_, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("big"), Ref: Ref{Commit: pinned}, MaxSize: 1 << 20})
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("size limit of 1048576 bytes"))
	names, _ := readDirNames(f.dir)
	g.Expect(names).To(BeEmpty(), "no checkout, no temporary objects left")

	// The tip alone fits.
	a, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("big"), Ref: Ref{Branch: "main"}, MaxSize: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "v: 4"}))
	// No limit: the whole history is fetched.
	a, err = f.Fetch(context.Background(), Request{URL: srv.HTTPURL("big"), Ref: Ref{Commit: pinned}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "v: 3"}))
}

// A bare commit below the tip is fetched alone, depth 1, when the server allows
// fetching a commit by id: the 2 MiB of history fit under a 1 MiB cap.
func TestFetchPinnedCommitShallow(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo, pinned := pinnedRepo(t, srv, "pinned")
	repo.Config("uploadpack.allowReachableSHA1InWant", "true")

	a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: srv.HTTPURL("pinned"), Ref: Ref{Commit: pinned}, MaxSize: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Fetched).To(BeTrue())
	g.Expect(a.Revision).To(Equal("sha1:" + pinned))
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "v: 3"}))
	g.Expect(srv.Counts("pinned").Fetches).To(Equal(1))

	// A commit the server does not have is still "not found".
	_, err = newTestFetcher(t).Fetch(context.Background(), Request{URL: srv.HTTPURL("pinned"), Ref: Ref{Commit: strings.Repeat("1", 40)}})
	g.Expect(errors.Is(err, ErrRefNotFound)).To(BeTrue(), "%v", err)
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// A commit pinned below a branch's tip is fetched alone too when the server also
// sends a branch's commits without trees (to check that the commit is in the
// branch): the 2 MiB of history fit under a 1 MiB cap, and a commit of another
// branch is still not found.
func TestFetchPinnedCommitInBranchShallow(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo, pinned := pinnedRepo(t, srv, "branch")
	other := repo.Commit("other", "elsewhere", map[string]string{"a.yaml": "other"})
	repo.Config("uploadpack.allowReachableSHA1InWant", "true")
	repo.Config("uploadpack.allowFilter", "true")
	url := srv.HTTPURL("branch")

	a, err := newTestFetcher(t).Fetch(context.Background(), Request{URL: url, Ref: Ref{Branch: "main", Commit: pinned}, MaxSize: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Revision).To(Equal("main@sha1:" + pinned))
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "v: 3"}))

	_, err = newTestFetcher(t).Fetch(context.Background(), Request{URL: url, Ref: Ref{Branch: "main", Commit: other}})
	g.Expect(errors.Is(err, ErrRefNotFound)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`is not in branch "main"`))
}
