package chartrepo_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// pushManifestOnly stores at reg's charts/<chart>:<tag> a chart manifest whose layer is
// archive's digest, without the blob: what a tenant's registry does to name another
// tenant's chart it has never seen the bytes of (the digest alone leaks through a
// status, a lock file or a public manifest).
func pushManifestOnly(t *testing.T, reg *chartserver.Registry, chart, tag string, archive []byte) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(archive, chartrepo.ChartLayerMediaType))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	ref, err := name.ParseReference(reg.Host + "/charts/" + chart + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	// Put writes the manifest alone: neither the layer nor the config blob is uploaded.
	if err := remote.Put(ref, img); err != nil {
		t.Fatal(err)
	}
}

// A registry whose manifest names the layer digest of a chart that another identity
// pulled (and the store holds) does not get that chart from the cache: the attacker's
// registry must serve the blob itself, and since it does not, the attacker gets an error
// and none of the victim's bytes. A registry that really holds the same chart downloads
// it once for its own identity.
func TestOCIChartIsNotBorrowedByDigest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	secret := chartserver.Package(t, "shop", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\ndata: {token: victim-secret}\n",
	})
	victimReg := chartserver.NewRegistry(t, "victim", "s3cret")
	victimReg.Push(t, "shop", "1.0.0", secret)
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())

	victim := chartrepo.Source{URL: victimReg.URL(), Username: "victim", Password: "s3cret",
		Key: chartrepo.CacheKey(victimReg.URL(), "team-a/creds")}
	poll, err := store.PollTags(ctx, victim, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	victimPath, n, err := store.Fetch(ctx, victim, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))

	// The attacker's registry names the victim's layer digest and has no such blob.
	attackerReg := chartserver.NewRegistry(t, "", "")
	pushManifestOnly(t, attackerReg, "shop", "1.0.0", secret)
	attacker := chartrepo.Source{URL: attackerReg.URL(), Key: chartrepo.CacheKey(attackerReg.URL(), "")}
	poll, err = store.PollTags(ctx, attacker, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	acv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	path, _, err := store.Fetch(ctx, attacker, acv)
	g.Expect(err).To(HaveOccurred(), "the attacker got the victim's chart at %s", path)
	g.Expect(path).To(BeEmpty())
	g.Expect(err.Error()).To(ContainSubstring("chart layer"))
	g.Expect(attackerReg.BlobDownloads.Load()).To(BeNumerically(">", 0), "the blob was asked of the attacker's registry")
	_, ok := store.Cached(attacker.Key, "shop", "1.0.0")
	g.Expect(ok).To(BeFalse(), "no record of the chart for the attacker")
	// Asking again changes nothing (no record was left by the failure).
	_, _, err = store.Fetch(ctx, attacker, acv)
	g.Expect(err).To(HaveOccurred())

	// The victim's copy is untouched and still served to the victim.
	again, n, err := store.Fetch(ctx, victim, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero())
	g.Expect(again).To(Equal(victimPath))
	g.Expect(os.ReadFile(again)).To(Equal(secret))

	// A registry that really serves the same bytes gets them, downloaded for itself.
	mirrorReg := chartserver.NewRegistry(t, "", "")
	mirrorReg.Push(t, "shop", "1.0.0", secret)
	mirror := chartrepo.Source{URL: mirrorReg.URL(), Key: chartrepo.CacheKey(mirrorReg.URL(), "")}
	poll, err = store.PollTags(ctx, mirror, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	mcv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	mpath, n, err := store.Fetch(ctx, mirror, mcv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0), "downloaded, not borrowed")
	g.Expect(mirrorReg.BlobDownloads.Load()).To(BeNumerically(">", 0))
	g.Expect(os.ReadFile(mpath)).To(Equal(secret))
}
