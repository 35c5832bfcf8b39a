package source

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// An http(s) Git URL on 127.0.0.1 (or a name resolving to it) is refused by the default
// guard before anything is sent: the listener receives nothing.
func TestFetchLoopbackRefusedByGuard(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	f, err := NewFetcherWithOptions(t.TempDir(), FetcherOptions{Egress: egress.New(egress.DefaultDeny)})
	g.Expect(err).NotTo(HaveOccurred())
	for _, url := range []string{"http://" + ln.Addr().String() + "/app.git", "https://localhost:" + port + "/app.git"} {
		_, err := f.Fetch(context.Background(), Request{URL: url, Timeout: 5 * time.Second,
			Auth: &Auth{Username: "gitsync", Password: "S3cr3t!"}})
		g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%s: %v", url, err)
		g.Expect(err.Error()).NotTo(ContainSubstring("S3cr3t!"))
	}
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())

	// The same Fetcher without a guard reads the suite's Git server on loopback.
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	repo.Commit("main", "initial", map[string]string{"a.yaml": "a: 1\n"})
	open, err := NewFetcherWithOptions(t.TempDir(), FetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = open.Fetch(context.Background(), Request{URL: srv.HTTPURL("app")})
	g.Expect(err).NotTo(HaveOccurred())
}

// file:// URLs are refused when the operator says so, and read otherwise (the CLI).
func TestFetchFileURLRefused(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	repo.Commit("main", "initial", map[string]string{"a.yaml": "a: 1\n"})
	refusing, err := NewFetcherWithOptions(t.TempDir(), FetcherOptions{RefuseFileURLs: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = refusing.Fetch(context.Background(), Request{URL: "file://" + repo.Path()})
	g.Expect(errors.Is(err, ErrURLInvalid)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("--allow-file-urls"))
	_, err = newTestFetcher(t).Fetch(context.Background(), Request{URL: "file://" + repo.Path()})
	g.Expect(err).NotTo(HaveOccurred())
}
