package chartrepo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// A HelmRepository at a listener on 127.0.0.1 (index over http(s), or an OCI registry,
// which loopback serves over plain http) is refused by the default guard: the listener
// receives nothing.
func TestHelmRepositoryLoopbackRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ln := receiver.Listen(t)
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{Egress: egress.New(egress.DefaultDeny)})
	g.Expect(err).NotTo(HaveOccurred())
	for _, url := range []string{"http://" + addr + "/charts", "https://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		_, err := store.Poll(ctx, chartrepo.Source{URL: url, Username: "u", Password: "p", Timeout: 5 * time.Second}, "", nil)
		g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%s: %v", url, err)
	}
	_, err = store.Poll(ctx, chartrepo.Source{URL: "oci://" + addr + "/charts", Timeout: 5 * time.Second}, "", []string{"shop"})
	g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
	// A chart URL of an index (which may name any host) is dialled through the guard too.
	_, _, err = store.Fetch(ctx, chartrepo.Source{URL: "https://charts.example.invalid"},
		&chartrepo.ChartVersion{Name: "shop", Version: "1.0.0", URLs: []string{"http://" + addr + "/shop-1.0.0.tgz"}})
	g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())
}

// A repository's basic auth does not follow its redirect to another port, nor from the
// index's origin to a chart's (guard off: both listeners are on loopback).
func TestBasicAuthNotForwardedAcrossRedirect(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	auth := make(chan string, 4)
	archive := shop(t, "1.0.0")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		if strings.HasSuffix(r.URL.Path, "index.yaml") {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  shop:\n  - name: shop\n    version: 1.0.0\n    urls: [shop-1.0.0.tgz]\n")
			return
		}
		w.Write(archive)
	}))
	defer other.Close()
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer repo.Close()
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: repo.URL, Username: "ann", Password: "S3cr3t!"}
	poll, err := store.PollIndex(ctx, src, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-auth).To(BeEmpty(), "the index's redirect to another port carried the credentials")
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = store.Fetch(ctx, src, cv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-auth).To(BeEmpty(), "the chart's redirect to another port carried the credentials")
}

// An index.yaml that never ends is cut off at the cap: the download stops there.
func TestIndexDownloadCapped(t *testing.T) {
	g := NewWithT(t)
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("apiVersion: v1\nentries:\n  x:\n"))
		line := []byte("  - {name: x, version: 1.0.0, urls: [x.tgz]}\n")
		for i := 0; i < 1<<20; i++ { // 45 MiB, unless the client stops reading
			n, err := w.Write(line)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{MaxIndexSize: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = store.PollIndex(context.Background(), chartrepo.Source{URL: srv.URL}, "")
	g.Expect(errors.Is(err, chartrepo.ErrTooLarge)).To(BeTrue(), "%v", err)
	srv.CloseClientConnections()
	g.Eventually(sent.Load).Should(BeNumerically("<", 8<<20))
	// The default cap is well below the 100 MiB that was read into memory before.
	g.Expect(chartrepo.DefaultMaxIndexSize).To(BeNumerically("<=", 32<<20))
}

// A registry that pages its tag list forever fails the poll after MaxTagPages pages.
func TestOCITagPagesCapped(t *testing.T) {
	g := NewWithT(t)
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		n := pages.Add(1)
		w.Header().Set("Link", fmt.Sprintf(`</v2/charts/shop/tags/list?n=1000&last=t%d>; rel="next"`, n))
		fmt.Fprintf(w, `{"name":"charts/shop","tags":["1.0.%d"]}`, n)
	}))
	defer srv.Close()
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{MaxTagPages: 3})
	g.Expect(err).NotTo(HaveOccurred())
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err = store.Poll(context.Background(), chartrepo.Source{URL: "oci://" + host + "/charts", Timeout: 10 * time.Second}, "", []string{"shop"})
	g.Expect(errors.Is(err, chartrepo.ErrTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(pages.Load()).To(BeEquivalentTo(3))

	// The registry of the suite still lists its tags.
	reg := chartserver.NewRegistry(t, "", "")
	reg.Push(t, "shop", "1.0.0", shop(t, "1.0.0"))
	poll, err := store.Poll(context.Background(), chartrepo.Source{URL: reg.URL()}, "", []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("1.0.0"))
}
