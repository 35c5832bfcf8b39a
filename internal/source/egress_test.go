package source

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
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

// ssh:// and scp-like URLs dial through the guard too (issue 34, item 3): one on a denied
// address, as an IP literal or a name resolving to it, with the default port or another,
// is refused before a byte is sent; the listener receives nothing.
func TestFetchSSHRefusedByGuard(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := gittest.NewServer(t, gittest.Options{})
	auth := &Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}
	f, err := NewFetcherWithOptions(t.TempDir(), FetcherOptions{Egress: egress.New(egress.DefaultDeny)})
	g.Expect(err).NotTo(HaveOccurred())
	for _, url := range []string{
		"ssh://git@127.0.0.1:" + port + "/app.git",
		"ssh://git@localhost:" + port + "/app.git",
		"git@127.0.0.1:" + port + ":team/app.git",
		"git@localhost:" + port + ":team/app.git",
		"git@169.254.169.254:team/app.git",
		"ssh://git@169.254.169.254/team/app.git",
	} {
		_, err := f.Fetch(context.Background(), Request{URL: url, Timeout: 5 * time.Second, Auth: auth})
		g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%s: %v", url, err)
	}
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())

	// A guard that allows loopback reads the suite's SSH server through the same path.
	repo := srv.CreateRepo("app")
	sha := repo.Commit("main", "initial", map[string]string{"a.yaml": "a: 1\n"})
	linkLocal := egress.New([]netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")})
	open, err := NewFetcherWithOptions(t.TempDir(), FetcherOptions{Egress: linkLocal})
	g.Expect(err).NotTo(HaveOccurred())
	sshURL := srv.SSHURL("app")
	scpURL := strings.Replace(strings.TrimPrefix(sshURL, "ssh://"), "/", ":", 1)
	for _, url := range []string{sshURL, scpURL} {
		a, err := open.Fetch(context.Background(), Request{URL: url, Auth: auth})
		g.Expect(err).NotTo(HaveOccurred(), url)
		g.Expect(a.Commit).To(Equal(sha))
	}
}
