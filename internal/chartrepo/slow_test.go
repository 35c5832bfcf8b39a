package chartrepo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// slowRepo is a chart repository over HTTP whose index answers at once and whose chart
// archives answer as their version says: "stall" accepts the request and never answers
// (until the test ends or release is closed), "trickle" sends the headers and then a
// byte every 100 ms, anything else the archive at once.
type slowRepo struct {
	url     string
	archive map[string][]byte // by version
	release chan struct{}
	once    sync.Once
}

func newSlowRepo(t *testing.T, versions ...string) *slowRepo {
	r := &slowRepo{archive: map[string][]byte{}, release: make(chan struct{})}
	for _, v := range versions {
		r.archive[v] = shop(t, v)
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.unblock()
		srv.CloseClientConnections()
		srv.Close()
	})
	r.url = srv.URL
	return r
}

func (r *slowRepo) unblock() { r.once.Do(func() { close(r.release) }) }

func (r *slowRepo) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/index.yaml" {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nentries:\n  shop:\n")
		for v, archive := range r.archive {
			sum := sha256.Sum256(archive)
			fmt.Fprintf(&b, "  - {apiVersion: v2, name: shop, version: %q, digest: %s, urls: [shop-%s.tgz]}\n", v, hex.EncodeToString(sum[:]), v)
		}
		_, _ = io.WriteString(w, b.String())
		return
	}
	version := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/shop-"), ".tgz")
	archive, ok := r.archive[version]
	if !ok {
		http.NotFound(w, req)
		return
	}
	switch {
	case strings.Contains(version, "stall"):
		select {
		case <-r.release:
		case <-req.Context().Done():
			return
		}
	case strings.Contains(version, "trickle"):
		w.Header().Set("Content-Length", fmt.Sprint(len(archive)))
		w.WriteHeader(http.StatusOK)
		for _, c := range archive {
			if _, err := w.Write([]byte{c}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-req.Context().Done():
				return
			}
		}
		return
	}
	_, _ = w.Write(archive)
}

func (r *slowRepo) version(t *testing.T, store *chartrepo.Store, src chartrepo.Source, version string) *chartrepo.ChartVersion {
	t.Helper()
	poll, err := store.PollIndex(context.Background(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	cv, err := store.Resolve(poll.Digest, "shop", version)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// A repository that accepts the connection and then never answers, or trickles a byte at
// a time, fails the download with ErrTimeout once the Source's timeout, within the
// store's MaxTimeout (gitsync run --max-timeout), has passed: a spec.timeout of a year
// gets the cap, not a year.
func TestSlowChartDownloadsEndAtTheCappedTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := newSlowRepo(t, "1.0.0-stall", "1.0.0-trickle", "1.0.0")
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{MaxTimeout: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: repo.url, Timeout: 8760 * time.Hour}

	for _, version := range []string{"1.0.0-stall", "1.0.0-trickle"} {
		_, _, err := store.Fetch(ctx, src, repo.version(t, store, src, version))
		g.Expect(errors.Is(err, chartrepo.ErrTimeout)).To(BeTrue(), "%s: %v", version, err)
		g.Expect(err.Error()).To(ContainSubstring("timed out after 1s"), version)
	}
	path, _, err := store.Fetch(ctx, src, repo.version(t, store, src, "1.0.0"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.ReadFile(path)).To(Equal(repo.archive["1.0.0"]))
}

// The same for an index that never comes, and for an OCI registry whose blob stalls.
func TestSlowIndexAndOCIBlobEndAtTheCappedTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	release := make(chan struct{})
	stall := func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}
	index := httptest.NewServer(http.HandlerFunc(stall))
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet {
			stall(w, req)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		close(release)
		for _, s := range []*httptest.Server{index, reg} {
			s.CloseClientConnections()
			s.Close()
		}
	})
	store, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{MaxTimeout: time.Second})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = store.PollIndex(ctx, chartrepo.Source{URL: index.URL, Timeout: time.Hour}, "")
	g.Expect(errors.Is(err, chartrepo.ErrTimeout)).To(BeTrue(), "%v", err)

	host := strings.TrimPrefix(reg.URL, "http://")
	pushTo(t, host, "shop", "1.0.0", shop(t, "1.0.0"))
	src := chartrepo.Source{URL: "oci://" + host + "/charts", Timeout: time.Hour}
	poll, err := store.PollTags(ctx, src, []string{"shop"})
	g.Expect(err).NotTo(HaveOccurred())
	cv, err := store.Resolve(poll.Digest, "shop", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = store.Fetch(ctx, src, cv)
	g.Expect(errors.Is(err, chartrepo.ErrTimeout)).To(BeTrue(), "%v", err)
}

// FetchWithin hands the worker back while a slow download goes on: ErrInProgress after
// the wait, then the download's outcome to a later call (the archive, or the timeout). A
// tenant's slow downloads beyond MaxDownloadsPerTenant wait for a place; another tenant's
// download does not.
func TestFetchWithinLeavesSlowDownloadsInTheBackground(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	versions := []string{"1.0.0-stall", "1.0.1-stall", "1.0.2-stall", "1.0.3-stall", "1.0.4-stall"}
	slow := newSlowRepo(t, versions...)
	fast := newSlowRepo(t, "2.0.0")
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: slow.url, Tenant: "team-a", Timeout: time.Hour}

	for _, v := range versions[:chartrepo.MaxDownloadsPerTenant] {
		_, _, err := store.FetchWithin(ctx, src, slow.version(t, store, src, v), 50*time.Millisecond)
		g.Expect(errors.Is(err, chartrepo.ErrInProgress)).To(BeTrue(), "%s: %v", v, err)
	}
	last := slow.version(t, store, src, versions[chartrepo.MaxDownloadsPerTenant])
	_, _, err = store.FetchWithin(ctx, src, last, 50*time.Millisecond)
	g.Expect(errors.Is(err, chartrepo.ErrInProgress)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("other downloads of the same namespace"))

	other := chartrepo.Source{URL: fast.url, Tenant: "team-b"}
	path, n, err := store.FetchWithin(ctx, other, fast.version(t, store, other, "2.0.0"), time.Minute)
	g.Expect(err).NotTo(HaveOccurred(), "another tenant waits for team-a's downloads")
	g.Expect(n).To(BeNumerically(">", 0))
	g.Expect(os.ReadFile(path)).To(Equal(fast.archive["2.0.0"]))

	// A call that joins a download under way does not wait for it: it returns before the
	// server answers (a moment later), though it would wait a minute for a download of
	// its own.
	first := slow.version(t, store, src, versions[0])
	go func() {
		time.Sleep(200 * time.Millisecond)
		slow.unblock()
	}()
	_, _, err = store.FetchWithin(ctx, src, first, time.Minute)
	g.Expect(errors.Is(err, chartrepo.ErrInProgress)).To(BeTrue(), "joined and waited: %v", err)

	// The server answers at last: a later call gets the archive the download stored.
	g.Eventually(func(g Gomega) {
		path, _, err := store.FetchWithin(ctx, src, first, 50*time.Millisecond)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.ReadFile(path)).To(Equal(slow.archive[versions[0]]))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	// A download that times out in the background: the next call learns why.
	never := newSlowRepo(t, "3.0.0-stall")
	capped, err := chartrepo.NewWithOptions(t.TempDir(), chartrepo.Options{MaxTimeout: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	src = chartrepo.Source{URL: never.url, Tenant: "team-c", Timeout: time.Hour}
	cv := never.version(t, capped, src, "3.0.0-stall")
	_, _, err = capped.FetchWithin(ctx, src, cv, 10*time.Millisecond)
	g.Expect(errors.Is(err, chartrepo.ErrInProgress)).To(BeTrue(), "%v", err)
	g.Eventually(func(g Gomega) {
		_, _, err := capped.FetchWithin(ctx, src, cv, 10*time.Millisecond)
		g.Expect(errors.Is(err, chartrepo.ErrTimeout)).To(BeTrue(), "%v", err)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// pushTo stores a chart in the registry at host, as `helm push` lays it out.
func pushTo(t *testing.T, host, chart, version string, archive []byte) {
	t.Helper()
	reg := &chartserver.Registry{Host: host}
	reg.Push(t, chart, version, archive)
}

// PollWithin does for an OCI registry's tag list (what a dependency's resolution asks in
// an Application's worker) what FetchWithin does for an archive: ErrInProgress while the
// registry stalls, the index once it answers.
func TestPollWithinLeavesSlowTagListsInTheBackground(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	release := make(chan struct{})
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tags/list") {
			select {
			case <-release:
			case <-req.Context().Done():
				return
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		reg.CloseClientConnections()
		reg.Close()
	})
	host := strings.TrimPrefix(reg.URL, "http://")
	pushTo(t, host, "shop", "1.0.0", shop(t, "1.0.0"))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	src := chartrepo.Source{URL: "oci://" + host + "/charts", Tenant: "team-a", Timeout: time.Hour}

	_, err = store.PollWithin(ctx, src, "shop", 50*time.Millisecond)
	g.Expect(errors.Is(err, chartrepo.ErrInProgress)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("the tags of oci://" + host + "/charts/shop"))
	close(release)
	g.Eventually(func(g Gomega) {
		poll, err := store.PollWithin(ctx, src, "shop", 50*time.Millisecond)
		g.Expect(err).NotTo(HaveOccurred())
		cv, err := store.Resolve(poll.Digest, "shop", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cv.Version).To(Equal("1.0.0"))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
