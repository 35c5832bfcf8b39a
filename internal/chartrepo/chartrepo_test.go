package chartrepo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

func shop(t *testing.T, version string) []byte {
	return chartserver.Package(t, "shop", map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: shop\nversion: " + version + "\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n",
		"values.yaml":         "size: small\n",
		"values-prod.yaml":    "size: large\n",
		"templates/NOTES.txt": "hello\n",
	})
}

func TestHTTPRepositoryPollsWithETagAndCachesCharts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := chartserver.NewRepo(t)
	repo.Username, repo.Password = "ann", "s3cret"
	repo.Add("shop", "1.0.0", shop(t, "1.0.0"))
	repo.Add("shop", "1.1.0", shop(t, "1.1.0"))
	repo.Add("shop", "2.0.0-rc.1", shop(t, "2.0.0-rc.1"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: repo.URL, Username: "ann", Password: "s3cret", CA: repo.CA}

	poll, err := store.PollIndex(ctx, src, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(poll.Digest).To(HavePrefix("sha256:"))
	g.Expect(poll.Bytes).To(BeNumerically(">", 0))

	// No change: a conditional GET, nothing downloaded.
	again, err := store.PollIndex(ctx, src, poll.Digest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(chartrepo.Poll{Digest: poll.Digest}))
	g.Expect(repo.IndexRequests.Load()).To(BeEquivalentTo(2))
	g.Expect(repo.IndexBytes.Load()).To(Equal(poll.Bytes))

	cv, err := store.Resolve(poll.Digest, "shop", ">=1.0.0 <2.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("1.1.0"))
	newest, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(newest.Version).To(Equal("1.1.0"), "no pre-release without asking")

	path, n, err := store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))
	g.Expect(os.ReadFile(path)).To(Equal(shop(t, "1.1.0")))
	path2, n, err := store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero())
	g.Expect(path2).To(Equal(path))
	g.Expect(repo.ChartDownloads.Load()).To(BeEquivalentTo(1))
	cached, ok := store.Cached(src.URL, "shop", "1.1.0")
	g.Expect(ok).To(BeTrue())
	g.Expect(cached).To(Equal(path))

	// A new version changes the index.
	repo.Add("shop", "1.2.0", shop(t, "1.2.0"))
	next, err := store.PollIndex(ctx, src, poll.Digest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.Digest).NotTo(Equal(poll.Digest))
	cv, err = store.Resolve(next.Digest, "shop", ">=1.0.0 <2.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("1.2.0"))

	// Nothing found: the message lists what there is.
	_, err = store.Resolve(next.Digest, "shop", ">=3")
	g.Expect(errors.Is(err, chartrepo.ErrChartNotFound)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring(`no version of chart "shop" matches ">=3" (has 2.0.0-rc.1, 1.2.0, 1.1.0, 1.0.0)`))
	_, err = store.Resolve(next.Digest, "cart", "")
	g.Expect(err).To(MatchError(ContainSubstring(`chart "cart" is not in the repository`)))
	_, err = store.Resolve(next.Digest, "shop", "not a range")
	g.Expect(err).To(MatchError(ContainSubstring(`version "not a range" is not a semver range`)))
}

func TestHTTPRepositoryErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := chartserver.NewRepo(t)
	repo.Username, repo.Password = "ann", "s3cret"
	repo.Add("shop", "1.0.0", shop(t, "1.0.0"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())

	_, err = store.PollIndex(ctx, chartrepo.Source{URL: repo.URL, Username: "ann", Password: "wrong", CA: repo.CA}, "")
	g.Expect(chartrepo.IsUnauthorized(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("401 Unauthorized"))
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))

	_, err = store.PollIndex(ctx, chartrepo.Source{URL: repo.URL, Username: "ann", Password: "s3cret"}, "")
	g.Expect(err).To(MatchError(ContainSubstring("certificate")), "the CA is needed")

	src := chartrepo.Source{URL: repo.URL, Username: "ann", Password: "s3cret", CA: repo.CA}
	repo.Fail(http.StatusInternalServerError)
	_, err = store.PollIndex(ctx, src, "")
	g.Expect(err).To(MatchError(ContainSubstring("500 Internal Server Error")))
	repo.Fail(0)

	_, err = store.PollIndex(ctx, chartrepo.Source{URL: repo.URL + "/missing", Username: "ann", Password: "s3cret", CA: repo.CA}, "")
	g.Expect(err).To(MatchError(ContainSubstring("404 Not Found")))

	// An index that is not one.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>hello</html>")) }))
	defer bad.Close()
	_, err = store.PollIndex(ctx, chartrepo.Source{URL: bad.URL}, "")
	g.Expect(errors.Is(err, chartrepo.ErrIndexInvalid)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(bad.URL + "/index.yaml: not a chart repository index"))

	// An archive over the cap is refused while downloading.
	big := make([]byte, chartrepo.MaxChartSize+1024)
	_, _ = rand.Read(big)
	repo.Add("big", "1.0.0", chartserver.Package(t, "big", map[string]string{"Chart.yaml": "apiVersion: v2\nname: big\nversion: 1.0.0\n", "blob": string(big)}))
	poll, err := store.PollIndex(ctx, src, "")
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "big", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = store.Fetch(ctx, src, cv)
	g.Expect(errors.Is(err, chartrepo.ErrTooLarge)).To(BeTrue(), "%v", err)
}

func TestOCIRegistryListsTagsAndPullsOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := chartserver.NewRegistry(t, "bob", "hunter2")
	reg.Push(t, "shop", "1.0.0", shop(t, "1.0.0"))
	reg.Push(t, "shop", "1.1.0+build.7", shop(t, "1.1.0+build.7"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: reg.URL(), Username: "bob", Password: "hunter2"}

	poll, err := store.PollTags(ctx, src, []string{"shop", "absent"})
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "~1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("1.1.0+build.7"))
	_, err = store.Resolve(poll.Digest, "absent", "")
	g.Expect(errors.Is(err, chartrepo.ErrChartNotFound)).To(BeTrue())

	same, err := store.PollTags(ctx, src, []string{"absent", "shop"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same.Digest).To(Equal(poll.Digest), "the same tags make the same index")

	path, n, err := store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))
	g.Expect(os.ReadFile(path)).To(Equal(shop(t, "1.1.0+build.7")))
	blobs := reg.BlobDownloads.Load()
	_, n, err = store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero())
	g.Expect(reg.BlobDownloads.Load()).To(Equal(blobs), "a cached chart is not pulled again")

	_, err = store.PollTags(ctx, chartrepo.Source{URL: reg.URL(), Username: "bob", Password: "nope"}, []string{"shop"})
	g.Expect(chartrepo.IsUnauthorized(err)).To(BeTrue(), "%v", err)
}

func TestGCKeepsIndexesInUseAndRecentCharts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := chartserver.NewRepo(t)
	repo.Add("shop", "1.0.0", shop(t, "1.0.0"))
	dir := t.TempDir()
	store, err := chartrepo.New(dir)
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: repo.URL, CA: repo.CA}
	old, err := store.PollIndex(ctx, src, "")
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(old.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	path, _, err := store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	repo.Add("shop", "1.1.0", shop(t, "1.1.0"))
	current, err := store.PollIndex(ctx, src, old.Digest)
	g.Expect(err).NotTo(HaveOccurred())
	// Age everything past the grace periods.
	long := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{path} {
		g.Expect(os.Chtimes(p, long, long)).To(Succeed())
	}
	entries, _ := os.ReadDir(dir + "/index")
	for _, e := range entries {
		g.Expect(os.Chtimes(dir+"/index/"+e.Name(), long, long)).To(Succeed())
	}
	removed, err := store.GC(map[string]bool{current.Digest: true}, 24*time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeNumerically(">=", 2))
	g.Expect(store.HasIndex(current.Digest)).To(BeTrue())
	g.Expect(store.HasIndex(old.Digest)).To(BeFalse())
	_, ok := store.Cached(src.URL, "shop", "1.0.0")
	g.Expect(ok).To(BeFalse())
}
