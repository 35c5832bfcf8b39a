package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// logs collects everything the receiver logs (V(1) included), so that tests
// can check that no secret is ever written.
var logs struct {
	sync.Mutex
	bytes.Buffer
}

func init() {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) {
		logs.Lock()
		defer logs.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1}))
}

// fakeCluster is an in-memory Cluster that records Wake calls and secret
// reads. A repository's Secret stands for the token of a Secret named after
// the repository.
type fakeCluster struct {
	mu          sync.Mutex
	repos       []Repository
	listErr     error
	wakeErr     map[string]error // by "namespace/name"
	woken       []string
	secretReads []string // "namespace/name" of each WebhookSecret call
	// block, when set, makes Repositories send on entered, then wait until
	// block is closed.
	block, entered chan struct{}
}

func (c *fakeCluster) Repositories(context.Context) ([]Repository, error) {
	c.mu.Lock()
	block := c.block
	c.mu.Unlock()
	if block != nil {
		c.entered <- struct{}{}
		<-block
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.repos)
	for i := range out {
		if out[i].Secret != nil {
			out[i].SecretName = "hook-" + out[i].Name
		}
		out[i].Secret = nil
	}
	return out, c.listErr
}

func (c *fakeCluster) WebhookSecret(_ context.Context, namespace, name string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secretReads = append(c.secretReads, namespace+"/"+name)
	for _, r := range c.repos {
		if r.Namespace == namespace && "hook-"+r.Name == name {
			return r.Secret, nil
		}
	}
	return nil, errors.New("not found")
}

func (c *fakeCluster) SecretReads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.secretReads)
}

func (c *fakeCluster) Wake(_ context.Context, namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := namespace + "/" + name
	if err := c.wakeErr[id]; err != nil {
		return err
	}
	c.woken = append(c.woken, id)
	return nil
}

func (c *fakeCluster) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.woken = nil
}

func (c *fakeCluster) Woken() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.woken))
}

// start serves a receiver over real HTTP.
func start(t *testing.T, c Cluster, opts Options) string {
	t.Helper()
	srv := httptest.NewServer(NewHandler(c, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

func hexMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// providerCase is how one provider delivers its documented push payload.
type providerCase struct {
	name string
	// file is the push payload, for branch main of the repository.
	file string
	// push holds the headers of a push event.
	push http.Header
	// sign sets the provider's signature header for body with secret.
	sign func(h http.Header, secret string, body []byte)
	// specURL is how a user might write the repository's spec.url: another
	// spelling of the payload's URLs.
	specURL string
}

var providerCases = []providerCase{
	{
		name: "github",
		file: "github-push.json",
		push: http.Header{"X-Github-Event": {"push"}, "X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"}},
		sign: func(h http.Header, secret string, body []byte) {
			h.Set("X-Hub-Signature-256", "sha256="+hexMAC(secret, body))
		},
		specURL: "ssh://git@GitHub.com/acme/platform-config",
	},
	{
		name: "gitlab",
		file: "gitlab-push.json",
		push: http.Header{"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Instance": {"https://gitlab.example.com"}},
		sign: func(h http.Header, secret string, _ []byte) {
			h.Set("X-Gitlab-Token", secret)
		},
		specURL: "https://gitlab.example.com/acme/infra/platform-config",
	},
	{
		name: "gitea",
		file: "gitea-push.json",
		push: http.Header{"X-Gitea-Event": {"push"}, "X-Gitea-Delivery": {"f6266f16-1bf3-46a5-9ea4-602e06ead473"}},
		sign: func(h http.Header, secret string, body []byte) {
			h.Set("X-Gitea-Signature", hexMAC(secret, body))
		},
		specURL: "git@gitea.example.com:acme/platform-config.git",
	},
	{
		name: "bitbucket",
		file: "bitbucket-push.json",
		push: http.Header{"X-Event-Key": {"repo:refs_changed"}, "X-Request-Id": {"7a1a5a5c-3a58-4d6e-9f8a-2b1f2c9d1f4e"}},
		sign: func(h http.Header, secret string, body []byte) {
			h.Set("X-Hub-Signature", "sha256="+hexMAC(secret, body))
		},
		specURL: "https://bitbucket.example.com/scm/PLAT/platform-config.git",
	},
	{
		name: "generic",
		file: "generic-push.json",
		push: http.Header{},
		sign: func(h http.Header, secret string, body []byte) {
			h.Set("X-Signature", "sha256="+hexMAC(secret, body))
		},
		specURL: "git@git.example.com:acme/platform-config",
	},
}

// reply is what the receiver answered.
type reply struct {
	code  int
	woken int
	body  string
}

// post delivers body to /hook/<provider> with headers; secret "" sends no
// signature header.
func post(t *testing.T, base, provider string, headers http.Header, body []byte, sign func(http.Header, string, []byte), secret string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/hook/"+provider, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if headers != nil {
		req.Header = headers.Clone()
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" && sign != nil {
		sign(req.Header, secret, body)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	// The body is {"woken": N} and nothing else, whatever the code.
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	if len(fields) != 1 {
		t.Fatalf("body %q has other fields than woken", raw)
	}
	n, ok := fields["woken"].(float64)
	if !ok {
		t.Fatalf("body %q: woken is not a number", raw)
	}
	return reply{code: resp.StatusCode, woken: int(n), body: string(raw)}
}

// withRef rewrites the payload's refs/heads/main (every testdata push uses it).
func withRef(body []byte, ref string) []byte {
	return bytes.ReplaceAll(body, []byte(`"refs/heads/main"`), []byte(`"`+ref+`"`))
}

// tenants are GitRepositories of one URL in several namespaces.
func tenants(url string) []Repository {
	return []Repository{
		{Namespace: "tenant-a", Name: "app", URL: url, Branch: "main", Secret: []byte("secret-a")},
		{Namespace: "tenant-a", Name: "app-dev", URL: url, Branch: "dev", Secret: []byte("secret-a")},
		{Namespace: "tenant-b", Name: "app", URL: url, Branch: "main", Secret: []byte("secret-b\n")},
		{Namespace: "tenant-c", Name: "no-secret", URL: url, Branch: "main"},
		{Namespace: "tenant-c", Name: "empty-secret", URL: url, Branch: "main", Secret: []byte("\n")},
		{Namespace: "tenant-a", Name: "elsewhere", URL: "https://git.example.org/acme/elsewhere.git", Branch: "main", Secret: []byte("secret-a")},
	}
}

func TestPushPerProvider(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			body := readTestdata(t, pc.file)
			cases := []struct {
				name   string
				body   []byte
				secret string
				sign   func(http.Header, string, []byte)
				code   int
				woken  []string
			}{
				{name: "tenant a's secret wakes only tenant a's repository on main",
					body: body, secret: "secret-a", code: http.StatusAccepted, woken: []string{"tenant-a/app"}},
				{name: "tenant b's secret (stored with a newline) wakes only tenant b's",
					body: body, secret: "secret-b", code: http.StatusAccepted, woken: []string{"tenant-b/app"}},
				{name: "wrong signature", body: body, secret: "guessed", code: http.StatusUnauthorized},
				{name: "missing signature", body: body, code: http.StatusUnauthorized},
				{name: "signed with an empty key does not wake repositories without a secret",
					body: body, secret: "\x00", sign: func(h http.Header, _ string, b []byte) {
						pc.sign(h, "", b)
						if pc.name == "gitlab" {
							h.Set("X-Gitlab-Token", " ")
						}
					}, code: http.StatusUnauthorized},
				{name: "other branch: authenticated, nothing woken",
					body: withRef(body, "refs/heads/feature"), secret: "secret-a", code: http.StatusAccepted},
				{name: "other ref kind: nothing woken",
					body: withRef(body, "refs/pull/12/head"), secret: "secret-a", code: http.StatusAccepted},
				{name: "dev branch wakes tenant a's dev repository",
					body: withRef(body, "refs/heads/dev"), secret: "secret-a", code: http.StatusAccepted, woken: []string{"tenant-a/app-dev"}},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					g := NewWithT(t)
					cluster := &fakeCluster{repos: tenants(pc.specURL)}
					base := start(t, cluster, Options{})
					sign := c.sign
					if sign == nil {
						sign = pc.sign
					}
					got := post(t, base, pc.name, pc.push, c.body, sign, c.secret)
					g.Expect(got.code).To(Equal(c.code))
					g.Expect(got.woken).To(Equal(len(c.woken)))
					g.Expect(cluster.Woken()).To(Equal(c.woken))
				})
			}
		})
	}
}

func TestUnknownRepository(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := readTestdata(t, pc.file)
			// The cluster knows another repository, under the same secret.
			cluster := &fakeCluster{repos: []Repository{
				{Namespace: "tenant-a", Name: "elsewhere", URL: "https://git.example.org/acme/elsewhere.git", Secret: []byte("secret-a")},
			}}
			base := start(t, cluster, Options{})
			got := post(t, base, pc.name, pc.push, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusUnauthorized))

			// Proving the shared secret: 202, nothing matched.
			base = start(t, cluster, Options{SharedSecret: []byte("admin")})
			got = post(t, base, pc.name, pc.push, body, pc.sign, "admin")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(got.woken).To(Equal(0))
			g.Expect(cluster.Woken()).To(BeEmpty())
		})
	}
}

// A caller without a valid signature cannot tell a known repository URL from
// an unknown one: same code, same body.
func TestUnauthenticatedCannotProbe(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := readTestdata(t, pc.file)
			known := &fakeCluster{repos: tenants(pc.specURL)}
			unknown := &fakeCluster{repos: tenants("https://git.example.org/acme/elsewhere.git")}
			for _, opts := range []Options{{}, {SharedSecret: []byte("admin")}} {
				for _, secret := range []string{"", "guessed"} {
					a := post(t, start(t, known, opts), pc.name, pc.push, body, pc.sign, secret)
					b := post(t, start(t, unknown, opts), pc.name, pc.push, body, pc.sign, secret)
					g.Expect(a).To(Equal(b))
					g.Expect(a.code).To(Equal(http.StatusUnauthorized))
				}
			}
			g.Expect(known.Woken()).To(BeEmpty())
			g.Expect(unknown.Woken()).To(BeEmpty())
		})
	}
}

func TestRepositoryWithoutSecretIsNeverWokenPerRepository(t *testing.T) {
	g := NewWithT(t)
	pc := providerCases[0]
	body := readTestdata(t, pc.file)
	cluster := &fakeCluster{repos: []Repository{
		{Namespace: "tenant-c", Name: "no-secret", URL: pc.specURL, Branch: "main"},
		{Namespace: "tenant-c", Name: "empty-secret", URL: pc.specURL, Branch: "main", Secret: []byte{}},
	}}
	base := start(t, cluster, Options{})
	for _, secret := range []string{"secret-a", "anything"} {
		got := post(t, base, pc.name, pc.push, body, pc.sign, secret)
		g.Expect(got.code).To(Equal(http.StatusUnauthorized))
	}
	// An HMAC keyed with the empty string is one anybody can compute.
	got := post(t, base, pc.name, pc.push, body, func(h http.Header, _ string, b []byte) { pc.sign(h, "", b) }, "x")
	g.Expect(got.code).To(Equal(http.StatusUnauthorized))
	g.Expect(cluster.Woken()).To(BeEmpty())
}

// The shared secret wakes every repository of the URL that follows the pushed
// ref, those without a webhook secret of their own included.
func TestSharedSecret(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := readTestdata(t, pc.file)
			cluster := &fakeCluster{repos: tenants(pc.specURL)}
			base := start(t, cluster, Options{SharedSecret: []byte("admin-secret\n")})

			got := post(t, base, pc.name, pc.push, body, pc.sign, "admin-secret")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(got.woken).To(Equal(4))
			g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app", "tenant-b/app", "tenant-c/empty-secret", "tenant-c/no-secret"}))

			// A tenant's own secret still works beside it, and still wakes only its own
			// (another receiver: this one knows the body, and would take it for a replay).
			cluster.reset()
			base = start(t, cluster, Options{SharedSecret: []byte("admin-secret\n")})
			got = post(t, base, pc.name, pc.push, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app"}))
		})
	}
}

func TestTagPushWakesTagAndSemVer(t *testing.T) {
	g := NewWithT(t)
	const url = "git@gitlab.example.com:acme/infra/platform-config.git"
	secret := []byte("secret-a")
	cluster := &fakeCluster{repos: []Repository{
		{Namespace: "a", Name: "tag-1-2-0", URL: url, Tag: "v1.2.0", Secret: secret},
		{Namespace: "a", Name: "tag-0-9-0", URL: url, Tag: "v0.9.0", Secret: secret},
		{Namespace: "a", Name: "semver", URL: url, SemVer: ">=1.0.0 <2.0.0", Secret: secret},
		{Namespace: "a", Name: "branch-main", URL: url, Branch: "main", Secret: secret},
		{Namespace: "a", Name: "default", URL: url, Secret: secret},
		{Namespace: "a", Name: "commit", URL: url, Commit: "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7", Secret: secret},
	}}
	base := start(t, cluster, Options{})
	gitlab := providerCases[1]
	got := post(t, base, "gitlab", http.Header{"X-Gitlab-Event": {"Tag Push Hook"}},
		readTestdata(t, "gitlab-tag-push.json"), gitlab.sign, "secret-a")
	g.Expect(got.code).To(Equal(http.StatusAccepted))
	g.Expect(got.woken).To(Equal(2))
	g.Expect(cluster.Woken()).To(Equal([]string{"a/semver", "a/tag-1-2-0"}))
}

func TestDefaultBranch(t *testing.T) {
	cases := []struct {
		name  string
		pc    providerCase
		ref   string
		woken []string
	}{
		{"github names main the default: push to main", providerCases[0], "refs/heads/main", []string{"a/default"}},
		{"github names main the default: push to feature", providerCases[0], "refs/heads/feature", nil},
		{"gitea names main the default: push to feature", providerCases[2], "refs/heads/feature", nil},
		{"bitbucket does not say: push to feature wakes", providerCases[3], "refs/heads/feature", []string{"a/default"}},
		{"generic does not say: push to feature wakes", providerCases[4], "refs/heads/feature", []string{"a/default"}},
		{"bitbucket: tags do not wake", providerCases[3], "refs/tags/v1.0.0", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			cluster := &fakeCluster{repos: []Repository{
				{Namespace: "a", Name: "default", URL: c.pc.specURL, Secret: []byte("s")},
				{Namespace: "a", Name: "pinned", URL: c.pc.specURL, Commit: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", Secret: []byte("s")},
			}}
			base := start(t, cluster, Options{})
			got := post(t, base, c.pc.name, c.pc.push, withRef(readTestdata(t, c.pc.file), c.ref), c.pc.sign, "s")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(cluster.Woken()).To(Equal(c.woken))
		})
	}
}

func TestPingAndOtherEvents(t *testing.T) {
	cases := []struct {
		name     string
		provider string
		headers  http.Header
		file     string
		code     int
	}{
		{"github ping", "github", http.Header{"X-Github-Event": {"ping"}}, "github-ping.json", http.StatusOK},
		{"bitbucket ping", "bitbucket", http.Header{"X-Event-Key": {"diagnostics:ping"}}, "bitbucket-ping.json", http.StatusOK},
		{"github issues event", "github", http.Header{"X-Github-Event": {"issues"}}, "github-push.json", http.StatusOK},
		{"gitlab merge request", "gitlab", http.Header{"X-Gitlab-Event": {"Merge Request Hook"}}, "gitlab-push.json", http.StatusOK},
		{"gitea create", "gitea", http.Header{"X-Gitea-Event": {"create"}}, "gitea-push.json", http.StatusOK},
		{"bitbucket cloud push", "bitbucket", http.Header{"X-Event-Key": {"repo:push"}}, "bitbucket-push.json", http.StatusOK},
		{"github without event header", "github", http.Header{}, "github-push.json", http.StatusBadRequest},
		{"gitlab without event header", "gitlab", http.Header{}, "gitlab-push.json", http.StatusBadRequest},
		{"gitea without event header", "gitea", http.Header{}, "gitea-push.json", http.StatusBadRequest},
		{"bitbucket without event header", "bitbucket", http.Header{}, "bitbucket-push.json", http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			cluster := &fakeCluster{repos: tenants("https://github.com/acme/platform-config")}
			base := start(t, cluster, Options{})
			// Unsigned: pings need no signature. Signed: the same answer.
			for _, secret := range []string{"", "secret-a"} {
				got := post(t, base, c.provider, c.headers, readTestdata(t, c.file), providerCases[0].sign, secret)
				g.Expect(got.code).To(Equal(c.code))
				g.Expect(got.woken).To(Equal(0))
			}
			g.Expect(cluster.Woken()).To(BeEmpty())
		})
	}
}

func TestForgejoAndNewGiteaHeaders(t *testing.T) {
	g := NewWithT(t)
	body := readTestdata(t, "gitea-push.json")
	cluster := &fakeCluster{repos: tenants(providerCases[2].specURL)}
	base := start(t, cluster, Options{})

	got := post(t, base, "gitea", http.Header{"X-Forgejo-Event": {"push"}}, body,
		func(h http.Header, s string, b []byte) { h.Set("X-Forgejo-Signature", hexMAC(s, b)) }, "secret-a")
	g.Expect(got.code).To(Equal(http.StatusAccepted))
	got = post(t, base, "gitea", http.Header{"X-Gitea-Event": {"push"}}, body,
		func(h http.Header, s string, b []byte) { h.Set("X-Hub-Signature-256", "sha256="+hexMAC(s, b)) }, "secret-b")
	g.Expect(got.code).To(Equal(http.StatusAccepted))
	g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app", "tenant-b/app"}))
}

func TestGitHubFormEncoded(t *testing.T) {
	g := NewWithT(t)
	cluster := &fakeCluster{repos: tenants(providerCases[0].specURL)}
	base := start(t, cluster, Options{})
	form := []byte(url.Values{"payload": {string(readTestdata(t, "github-push.json"))}}.Encode())
	headers := http.Header{"X-Github-Event": {"push"}, "Content-Type": {"application/x-www-form-urlencoded"}}
	got := post(t, base, "github", headers, form, providerCases[0].sign, "secret-a")
	g.Expect(got.code).To(Equal(http.StatusAccepted))
	g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app"}))
}

func TestHTTPErrors(t *testing.T) {
	github := providerCases[0]
	body := readTestdata(t, github.file)

	t.Run("GET is 405", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &fakeCluster{repos: tenants(github.specURL)}
		base := start(t, cluster, Options{})
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			req, _ := http.NewRequest(method, base+"/hook/github", nil)
			got := do(t, req)
			g.Expect(got.code).To(Equal(http.StatusMethodNotAllowed), method)
		}
		resp, err := http.Get(base + "/hook/generic")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.Header.Get("Allow")).To(Equal("POST"))
		g.Expect(cluster.Woken()).To(BeEmpty())
	})

	t.Run("unknown provider is 404", func(t *testing.T) {
		g := NewWithT(t)
		base := start(t, &fakeCluster{}, Options{})
		for _, path := range []string{"/hook/gogs", "/hook/", "/hook/github/", "/hook/github/x", "/hooks/github", "/", "/github"} {
			req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
			got := do(t, req)
			g.Expect(got.code).To(Equal(http.StatusNotFound), path)
			req, _ = http.NewRequest(http.MethodGet, base+path, nil)
			got = do(t, req)
			g.Expect(got.code).To(Equal(http.StatusNotFound), path)
		}
	})

	t.Run("oversized body is 413", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &fakeCluster{repos: tenants(github.specURL)}
		big := append(bytes.Repeat([]byte(" "), DefaultMaxBodyBytes), body...)
		got := post(t, start(t, cluster, Options{}), "github", github.push, big, github.sign, "secret-a")
		g.Expect(got.code).To(Equal(http.StatusRequestEntityTooLarge))

		// A smaller cap, with a body sent without Content-Length.
		base := start(t, cluster, Options{MaxBodyBytes: 512})
		req, _ := http.NewRequest(http.MethodPost, base+"/hook/github", io.MultiReader(bytes.NewReader(body)))
		req.Header = github.push.Clone()
		github.sign(req.Header, "secret-a", body)
		got = do(t, req)
		g.Expect(got.code).To(Equal(http.StatusRequestEntityTooLarge))
		g.Expect(cluster.Woken()).To(BeEmpty())

		// Just at the cap is fine.
		base = start(t, cluster, Options{MaxBodyBytes: int64(len(body))})
		got = post(t, base, "github", github.push, body, github.sign, "secret-a")
		g.Expect(got.code).To(Equal(http.StatusAccepted))
	})

	t.Run("malformed payload is 400", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &fakeCluster{repos: tenants(github.specURL)}
		base := start(t, cluster, Options{})
		for _, bad := range [][]byte{
			[]byte(`{"ref": "refs/heads/main", "repository": `),
			[]byte(`{"repository": {"clone_url": "https://github.com/acme/platform-config.git"}}`),
			[]byte(`{"ref": "refs/heads/main"}`),
			[]byte(``),
		} {
			got := post(t, base, "github", github.push, bad, github.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusBadRequest), string(bad))
		}
		got := post(t, base, "generic", nil, []byte(`{"url": "https://github.com/acme/platform-config", "ref": "main"}`), providerCases[4].sign, "secret-a")
		g.Expect(got.code).To(Equal(http.StatusBadRequest))
		g.Expect(cluster.Woken()).To(BeEmpty())
	})

	t.Run("missing signature is 401 even for a malformed payload", func(t *testing.T) {
		g := NewWithT(t)
		got := post(t, start(t, &fakeCluster{}, Options{}), "github", github.push, []byte(`{`), nil, "")
		g.Expect(got.code).To(Equal(http.StatusUnauthorized))
	})

	t.Run("malformed signature header is 401", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &fakeCluster{repos: tenants(github.specURL)}
		base := start(t, cluster, Options{})
		for _, sig := range []string{"sha1=" + hexMAC("secret-a", body), hexMAC("secret-a", body), "sha256=zz", "sha256=", "sha256=" + hexMAC("secret-a", body)[:10]} {
			got := post(t, base, "github", github.push, body, func(h http.Header, _ string, _ []byte) {
				h.Set("X-Hub-Signature-256", sig)
			}, "x")
			g.Expect(got.code).To(Equal(http.StatusUnauthorized), sig)
		}
		// Upper-case hex is still hex.
		got := post(t, base, "github", github.push, body, func(h http.Header, s string, b []byte) {
			h.Set("X-Hub-Signature-256", "sha256="+strings.ToUpper(hexMAC(s, b)))
		}, "secret-a")
		g.Expect(got.code).To(Equal(http.StatusAccepted))
	})

	t.Run("cluster errors are 500", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &fakeCluster{repos: tenants(github.specURL), listErr: errors.New("apiserver down")}
		got := post(t, start(t, cluster, Options{}), "github", github.push, body, github.sign, "secret-a")
		g.Expect(got.code).To(Equal(http.StatusInternalServerError))

		cluster = &fakeCluster{repos: tenants(github.specURL), wakeErr: map[string]error{"tenant-b/app": errors.New("conflict")}}
		got = post(t, start(t, cluster, Options{SharedSecret: []byte("admin")}), "github", github.push, body, github.sign, "admin")
		g.Expect(got.code).To(Equal(http.StatusInternalServerError))
		g.Expect(got.woken).To(Equal(3))
		g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app", "tenant-c/empty-secret", "tenant-c/no-secret"}))
	})
}

func TestNoSecretsInLogs(t *testing.T) {
	g := NewWithT(t)
	for _, pc := range providerCases {
		cluster := &fakeCluster{repos: tenants(pc.specURL)}
		base := start(t, cluster, Options{SharedSecret: []byte("admin-secret")})
		body := readTestdata(t, pc.file)
		for _, secret := range []string{"secret-a", "secret-b", "admin-secret", "wrong-secret", ""} {
			post(t, base, pc.name, pc.push, body, pc.sign, secret)
		}
	}
	logs.Lock()
	text := logs.String()
	logs.Unlock()
	g.Expect(text).To(ContainSubstring("woke GitRepository"))
	g.Expect(text).To(ContainSubstring("delivery rejected"))
	for _, secret := range []string{"secret-a", "secret-b", "admin-secret", "wrong-secret"} {
		g.Expect(text).NotTo(ContainSubstring(secret))
	}
}

func TestMetrics(t *testing.T) {
	g := NewWithT(t)
	count := func(provider, code string) float64 {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != "gitsync_webhook_requests_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["provider"] == provider && labels["code"] == code {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	gitea := providerCases[2]
	cluster := &fakeCluster{repos: tenants(gitea.specURL)}
	base := start(t, cluster, Options{})
	body := readTestdata(t, gitea.file)

	accepted, unauthorized, unknown := count("gitea", "202"), count("gitea", "401"), count("unknown", "404")
	post(t, base, "gitea", gitea.push, body, gitea.sign, "secret-a")
	post(t, base, "gitea", gitea.push, body, gitea.sign, "secret-a")
	post(t, base, "gitea", gitea.push, body, gitea.sign, "nope")
	post(t, base, "not-a-provider", gitea.push, body, gitea.sign, "secret-a")
	g.Expect(count("gitea", "202") - accepted).To(Equal(2.0))
	g.Expect(count("gitea", "401") - unauthorized).To(Equal(1.0))
	g.Expect(count("unknown", "404") - unknown).To(Equal(1.0))
	g.Expect(count("not-a-provider", "404")).To(Equal(0.0))
}

// A captured signed delivery, replayed (as is, or with a new delivery id header, which
// no provider signs), wakes nothing, for every provider; a new push (another body) still
// wakes; one tenant's replayed deliveries do not make the receiver forget another's.
func TestReplayedDeliveryHasNoEffect(t *testing.T) {
	for _, pc := range providerCases {
		if pc.name == "generic" {
			continue // its body names no event: TestGenericRepeatedPushWakesAgain
		}
		t.Run(pc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := readTestdata(t, pc.file)
			cluster := &fakeCluster{repos: tenants(pc.specURL)}
			base := start(t, cluster, Options{})

			got := post(t, base, pc.name, pc.push, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app"}))

			for _, id := range []string{"", "forged-new-delivery-id"} {
				cluster.reset()
				h := pc.push.Clone()
				for _, name := range []string{"X-Github-Delivery", "X-Gitea-Delivery", "X-Request-Id", "X-Gitlab-Event-UUID"} {
					if id != "" {
						h.Set(name, id)
					}
				}
				got = post(t, base, pc.name, h, body, pc.sign, "secret-a")
				g.Expect(got.code).To(Equal(http.StatusAccepted))
				g.Expect(got.woken).To(BeZero(), "replay %q", id)
				g.Expect(cluster.Woken()).To(BeEmpty())
			}

			// The replay memory of tenant-a does not hold tenant-b's deliveries: b's own
			// delivery of the same body wakes b once, then is a replay too.
			cluster.reset()
			g.Expect(post(t, base, pc.name, pc.push, body, pc.sign, "secret-b").woken).To(Equal(1))
			g.Expect(post(t, base, pc.name, pc.push, body, pc.sign, "secret-b").woken).To(BeZero())

			// A new push (another body, e.g. another commit) wakes again.
			cluster.reset()
			var payload map[string]any
			newBody := body
			if json.Unmarshal(body, &payload) == nil {
				payload["gitsync_test_nonce"] = "another push"
				newBody, _ = json.Marshal(payload)
			}
			got = post(t, base, pc.name, pc.push, newBody, pc.sign, "secret-a")
			g.Expect(got.woken).To(Equal(1))
			g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app"}))
		})
	}
}

// The generic provider's body ({"url", "ref"}) is the same for every push of a branch:
// each signed delivery wakes the repository, the second push a second later included.
func TestGenericRepeatedPushWakesAgain(t *testing.T) {
	for _, pc := range providerCases {
		if pc.name != "generic" {
			continue
		}
		g := NewWithT(t)
		body := readTestdata(t, pc.file)
		cluster := &fakeCluster{repos: tenants(pc.specURL)}
		base := start(t, cluster, Options{})
		for i := range 3 {
			cluster.reset()
			got := post(t, base, pc.name, pc.push, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(cluster.Woken()).To(Equal([]string{"tenant-a/app"}), "push %d", i+1)
		}
	}
}

// The memory is bounded per repository: after replaysPerRepo newer deliveries of one
// repository its oldest is forgotten, and entries older than replayWindow do not count.
func TestReplayMemoryIsBounded(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1_700_000_000, 0)
	r := newReplays()
	r.now = func() time.Time { return now }
	first := sha256.Sum256([]byte("first"))
	g.Expect(r.replayed("team", "app", first)).To(BeFalse())
	g.Expect(r.replayed("team", "app", first)).To(BeTrue())
	g.Expect(r.replayed("other", "app", first)).To(BeFalse())
	for i := range replaysPerRepo {
		g.Expect(r.replayed("team", "app", sha256.Sum256([]byte{byte(i), 1}))).To(BeFalse())
	}
	g.Expect(r.replayed("team", "app", first)).To(BeFalse(), "forgotten after replaysPerRepo newer deliveries")
	now = now.Add(replayWindow)
	g.Expect(r.replayed("team", "app", first)).To(BeFalse(), "older than replayWindow")
	for i := range replayRepos + 1 {
		r.replayed("ns", fmt.Sprint(i), first)
	}
	g.Expect(r.repos.Len()).To(Equal(replayRepos))
}
