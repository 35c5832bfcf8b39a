package chartrepo_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// A chart that one repository identity (URL + credentials) downloaded is not served from
// the cache to another identity of the same URL: it downloads the chart itself, with its
// own credentials, and without any it gets nothing.
func TestChartCacheBelongsToTheIdentityThatDownloaded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := chartserver.NewRepo(t)
	repo.Username, repo.Password = "team-a", "s3cret"
	repo.Add("shop", "1.0.0", shop(t, "1.0.0"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	teamA := chartrepo.Source{URL: repo.URL, Username: "team-a", Password: "s3cret", CA: repo.CA,
		Key: chartrepo.CacheKey(repo.URL, "team-a/creds")}
	poll, err := store.PollIndex(ctx, teamA, "")
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, n, err := store.Fetch(ctx, teamA, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))

	teamB := chartrepo.Source{URL: repo.URL, CA: repo.CA, Key: chartrepo.CacheKey(repo.URL, "")}
	_, ok := store.CachedVersion(teamB.Key, cv)
	g.Expect(ok).To(BeFalse(), "team-b finds team-a's chart in the cache")
	_, _, err = store.Fetch(ctx, teamB, cv)
	g.Expect(err).To(HaveOccurred(), "team-b got team-a's private chart without credentials")
	g.Expect(chartrepo.IsUnauthorized(err)).To(BeTrue(), err.Error())
}
