package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A repository that names another repository's commit (a SHA seen in a status or an
// event) gets nothing from the other's checkout: it must fetch the commit from its own
// remote, which does not serve it.
func TestCheckoutsBelongToTheirRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	private := gittest.NewServer(t, gittest.Options{Username: "team-a", Password: "s3cret-a"})
	sha := private.CreateRepo("private").Commit("main", "secret", map[string]string{"secret.yaml": "team-a's data"})
	public := gittest.NewServer(t, gittest.Options{})
	public.CreateRepo("public").Commit("main", "public", map[string]string{"public.yaml": "anyone's"})
	f := newTestFetcher(t)

	a, err := f.Fetch(ctx, Request{URL: private.HTTPURL("private"), Ref: Ref{Branch: "main"},
		Auth: &Auth{Username: "team-a", Password: "s3cret-a"}, Key: RepositoryKey(private.HTTPURL("private"), "team-a/creds")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Commit).To(Equal(sha))

	_, err = f.Fetch(ctx, Request{URL: public.HTTPURL("public"), Ref: Ref{Commit: sha},
		Key: RepositoryKey(public.HTTPURL("public"), "")})
	g.Expect(err).To(HaveOccurred(), "team-b read team-a's commit through a public repository")
	g.Expect(err).To(MatchError(ErrRefNotFound))
}

// borrowingServer is an attacker's Git server: whatever path it is asked for it
// redirects to /info/refs, where it advertises sha as main and HEAD (a commit seen in
// another tenant's status). It has no objects.
func borrowingServer(t *testing.T, sha string) *httptest.Server {
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/info/refs" {
			http.Redirect(w, r, "/info/refs?service=git-upload-pack", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+
			pkt(sha+" HEAD\x00side-band-64k ofs-delta symref=HEAD:refs/heads/main\n")+pkt(sha+" refs/heads/main\n")+"0000")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Issue 34, item 2: a URL whose text names the victim's repository but which dials the
// attacker's server (a fragment or a query holding "@host/path", or user info) never
// has the victim's key, and is refused: the attacker's server advertising the victim's
// commit gets nothing of the victim's checkout.
func TestCheckoutsBelongToTheEndpointDialled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	victim := gittest.NewServer(t, gittest.Options{})
	victimURL := victim.HTTPURL("private")
	sha := victim.CreateRepo("private").Commit("main", "secret", map[string]string{"secret.yaml": "team-a's data"})
	f := newTestFetcher(t)
	a, err := f.Fetch(ctx, Request{URL: victimURL, Ref: Ref{Branch: "main"}, Key: RepositoryKey(victimURL, "")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Commit).To(Equal(sha))

	evil := borrowingServer(t, sha)
	victimHostPath := strings.TrimPrefix(victimURL, "http://")
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	for _, url := range []string{
		"http://" + evilHost + "#@" + victimHostPath,
		"http://" + evilHost + "?@" + victimHostPath,
		"http://" + evilHost + "/#@" + victimHostPath,
		"http://" + evilHost + "/%23@" + victimHostPath,
		"http://" + evilHost + "/%3F@" + victimHostPath,
		"http://user@" + victimHostPath,
		"http://" + victimHostPath + "?x=1",
	} {
		a, err := f.Fetch(ctx, Request{URL: url, Ref: Ref{Branch: "main"}, Key: RepositoryKey(url, "")})
		g.Expect(a).To(BeNil(), "%s borrowed the victim's checkout", url)
		g.Expect(errors.Is(err, ErrURLInvalid)).To(BeTrue(), "%s: %v", url, err)
		g.Expect(RepositoryKey(url, "")).NotTo(Equal(RepositoryKey(victimURL, "")), url)
	}
}

// The key is the endpoint that is dialled: spellings of one endpoint share it, another
// host, port, scheme, login or path does not.
func TestRepositoryKeyIsTheEndpoint(t *testing.T) {
	g := NewWithT(t)
	same := [][]string{
		{"https://git.corp/a/app.git", "HTTPS://Git.Corp/a/app.git", "https://git.corp:443/a/app.git", "https://git.corp/a/app.git/"},
		{"ssh://git@git.corp/a/app.git", "ssh://git@git.corp:22/a/app.git", "ssh://git@GIT.corp/a/app.git", "git@git.corp:/a/app.git"},
		{"git@git.corp:a/app.git", "git@git.corp:22:a/app.git"},
		{"http://127.0.0.1:8080/a.git", "http://127.0.0.1:8080/a.git//"},
	}
	seen := map[string]string{}
	for _, urls := range same {
		key := RepositoryKey(urls[0], "ns/creds")
		for _, u := range urls[1:] {
			g.Expect(RepositoryKey(u, "ns/creds")).To(Equal(key), "%s and %s", urls[0], u)
		}
		g.Expect(seen).NotTo(HaveKey(key), urls[0])
		seen[key] = urls[0]
	}
	for _, u := range []string{
		"http://git.corp/a/app.git", "https://git.corp:8443/a/app.git", "https://evil.example/a/app.git",
		"https://git.corp/a/App.git", "ssh://other@git.corp/a/app.git",
		"https://evil.example#@git.corp/a/app.git", "https://evil.example?@git.corp/a/app.git",
	} {
		g.Expect(seen).NotTo(HaveKey(RepositoryKey(u, "ns/creds")), u)
	}
	g.Expect(RepositoryKey("https://git.corp/a/app.git", "other/creds")).NotTo(Equal(RepositoryKey("https://git.corp/a/app.git", "ns/creds")))
}
