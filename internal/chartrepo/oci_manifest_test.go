package chartrepo_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
)

// A registry that answers a chart's manifest with megabytes (go-containerregistry alone
// would read up to 100 MiB of it into memory, for each pull) fails the pull at
// MaxManifestBytes.
func TestOCIManifestCapped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			_, _ = io.WriteString(w, `{"schemaVersion":2,"annotations":{"x":"`+strings.Repeat("x", 2*chartrepo.MaxManifestBytes)+`"}}`)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	pushTo(t, host, "shop", "1.0.0", shop(t, "1.0.0"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: "oci://" + host + "/charts"}
	poll, err := store.PollTags(ctx, src, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = store.Fetch(ctx, src, cv)
	g.Expect(errors.Is(err, chartrepo.ErrTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("larger than 1048576 bytes"))
}
