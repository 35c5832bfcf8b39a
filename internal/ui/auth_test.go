package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// plain is a client that sends no token and follows no redirect.
var plain = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

// serviceAccountToken creates the ServiceAccount ns/name and returns a token the API
// server issued for it and its user name.
func serviceAccountToken(t *testing.T, ns, name string) (token, user string) {
	t.Helper()
	return env.ServiceAccountToken(t, ns, name)
}

// call sends method url with the headers (Authorization: Bearer token when token is set)
// and no other credentials; it returns the response and its body.
func call(t *testing.T, method, url, token string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// routes are the server's routes as requests: method and path, with ns/web for the
// Application of a path and sync as the action.
func routes(srv *testServer, ns string) [][2]string {
	var out [][2]string
	for _, p := range srv.UI.Patterns() {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{$}", "", "{namespace}", ns, "{name}", "web", "{action}", "sync").Replace(path)
		if strings.HasSuffix(path, "/object") {
			path += "?id=Deployment/" + ns + "/web"
		}
		if path == "/static/" {
			path += "app.js"
		}
		out = append(out, [2]string{method, path})
	}
	return out
}

// Every endpoint but the static assets answers 401 without a token, or with a token that
// is not this server's (`gitsync ui`) or that the API server does not accept (operator).
func TestEveryEndpointNeedsAToken(t *testing.T) {
	f := newFixture(t)
	for name, opts := range map[string]ui.Options{"launch token": {}, "kubernetes": {Auth: ui.AuthKubernetes}} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := startUI(t, env.Config, opts)
			rs := routes(srv, f.ns)
			g.Expect(rs).To(ContainElement([2]string{"GET", "/api/events"}))
			g.Expect(len(rs)).To(BeNumerically(">=", 10))
			for _, r := range rs {
				for _, token := range []string{"", "not-a-token", strings.Repeat("0", 64)} {
					resp, body := call(t, r[0], srv.URL+r[1], token)
					if r[1] == "/static/app.js" {
						g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s %s", r[0], r[1])
						continue
					}
					g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "%s %s with token %q: %s", r[0], r[1], token, body)
					g.Expect(body).NotTo(ContainSubstring(f.ns))
				}
			}
			// A browser gets the login page.
			resp, body := call(t, "GET", srv.URL+"/apps/"+f.ns+"/web", "", "Accept", "text/html")
			g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
			if opts.Auth == ui.AuthKubernetes {
				g.Expect(body).To(ContainSubstring(`action="/login"`))
			} else {
				g.Expect(body).To(ContainSubstring("gitsync ui"))
			}
		})
	}
}

// The operator's UI answers with the caller's rights: a ServiceAccount without rights in
// team-a sees nothing of it, one with rights in team-a sees team-a only.
func TestOperatorUIAnswersWithCallersRights(t *testing.T) {
	g := NewWithT(t)
	teamA, other := newFixture(t), newFixture(t)
	teamA.addChildren(t)
	home := env.Namespace(t)
	nobody, _ := serviceAccountToken(t, home, "nobody")
	viewer, viewerUser := serviceAccountToken(t, home, "viewer")
	grantView(t, viewerUser, teamA.ns)
	srv := startUI(t, env.Config, ui.Options{Auth: ui.AuthKubernetes})

	apps := func(token string) []ui.AppRow {
		resp, body := call(t, "GET", srv.URL+"/api/apps", token)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
		var list struct{ Items []ui.AppRow }
		g.Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		return list.Items
	}
	sources := func(token string) []ui.SourceRow {
		resp, body := call(t, "GET", srv.URL+"/api/sources", token)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
		var list struct{ Items []ui.SourceRow }
		g.Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		return list.Items
	}
	g.Expect(apps(nobody)).NotTo(ContainElement(HaveField("Namespace", teamA.ns)))
	g.Expect(apps(nobody)).NotTo(ContainElement(HaveField("Namespace", other.ns)))
	g.Expect(sources(nobody)).NotTo(ContainElement(HaveField("Namespace", teamA.ns)))
	_, page := call(t, "GET", srv.URL+"/", nobody)
	g.Expect(page).NotTo(ContainSubstring(teamA.ns))
	for _, path := range []string{
		"/apps/" + teamA.ns + "/web",
		"/api/apps/" + teamA.ns + "/web",
		"/api/apps/" + teamA.ns + "/web/object?id=Deployment/" + teamA.ns + "/web",
		"/api/apps/" + teamA.ns + "/web/object?id=ConfigMap/" + teamA.ns + "/settings",
		"/api/apps/" + teamA.ns + "/missing",
	} {
		resp, body := call(t, "GET", srv.URL+path, nobody)
		g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "%s: %s", path, body)
		g.Expect(body).NotTo(ContainSubstring("nginx"))
	}

	g.Expect(apps(viewer)).To(ConsistOf(HaveField("Namespace", teamA.ns)))
	g.Expect(sources(viewer)).To(ConsistOf(HaveField("Namespace", teamA.ns)))
	resp, body := call(t, "GET", srv.URL+"/api/apps/"+other.ns+"/web", viewer)
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound), body)
	resp, body = call(t, "GET", srv.URL+"/api/apps/"+teamA.ns+"/web", viewer)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	var detail ui.AppDetail
	g.Expect(json.Unmarshal([]byte(body), &detail)).To(Succeed())
	g.Expect(findNode(detail.Tree, "Pod/"+teamA.ns+"/web-7d9f-abcde")).NotTo(BeNil(), "pods are readable: children shown")
	g.Expect(findNode(detail.Tree, "Secret/"+teamA.ns+"/creds")).To(HaveField("Health", gitsyncv1.HealthStatusUnknown))
	resp, body = call(t, "GET", srv.URL+"/api/apps/"+teamA.ns+"/web/object?id=Deployment/"+teamA.ns+"/web", viewer)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("nginx:1.0"))
	// Secrets are not granted to the viewer: no diff, no metadata.
	resp, body = call(t, "GET", srv.URL+"/api/apps/"+teamA.ns+"/web/object?id=Secret/"+teamA.ns+"/creds", viewer)
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), body)
	g.Expect(body).NotTo(ContainSubstring("password"))
	// Read-only: the operator's UI refuses actions whoever asks.
	resp, _ = call(t, "POST", srv.URL+"/api/apps/"+teamA.ns+"/web/sync", viewer)
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))

	// The browser's way in: the login form keeps the token in a cookie.
	form := url.Values{"token": {viewer}}.Encode()
	req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	login, err := plain.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	login.Body.Close()
	g.Expect(login.StatusCode).To(Equal(http.StatusSeeOther))
	cookies := login.Cookies()
	g.Expect(cookies).To(ContainElement(And(HaveField("HttpOnly", true), HaveField("Value", viewer))))
	req, _ = http.NewRequest("GET", srv.URL+"/api/apps", nil)
	req.AddCookie(cookies[0])
	resp, err = plain.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	// The event stream carries team-a's changes to the viewer, never the other's.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := stream(t, ctx, srv.URL, viewer)
	touch := func(f *fixture, value string) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		base := client.MergeFrom(app.DeepCopy())
		app.Labels = map[string]string{"touched": value}
		g.Expect(env.Client.Patch(ctx, app, base)).To(Succeed())
	}
	touch(other, "1")
	touch(teamA, "1")
	mine := `data: {"kind":"Application","namespace":"` + teamA.ns + `","name":"web"}`
	for {
		select {
		case l, ok := <-lines:
			g.Expect(ok).To(BeTrue(), "stream closed")
			g.Expect(l).NotTo(ContainSubstring(other.ns), "a change of another namespace reached the viewer")
			if l == mine {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no change event of team-a's Application")
		}
	}
}

// stream opens /api/events with token and returns its lines once it is connected.
func stream(t *testing.T, ctx context.Context, base, token string) <-chan string {
	t.Helper()
	resp := openStream(t, ctx, base, token)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %s", resp.Status)
	}
	lines := make(chan string, 1024)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "retry: 1000" {
			t.Fatalf("event stream began with %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("event stream did not connect")
	}
	return lines
}

func openStream(t *testing.T, ctx context.Context, base, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Event streams are capped in all and per caller: beyond a cap, 503; a closed stream
// frees its place.
func TestEventStreamsAreCapped(t *testing.T) {
	g := NewWithT(t)
	home := env.Namespace(t)
	a, _ := serviceAccountToken(t, home, "a")
	b, _ := serviceAccountToken(t, home, "b")
	c, _ := serviceAccountToken(t, home, "c")
	srv := startUI(t, env.Config, ui.Options{Auth: ui.AuthKubernetes, MaxStreams: 2, MaxStreamsPerCaller: 1})
	ctx := context.Background()
	ctxA, closeA := context.WithCancel(ctx)
	defer closeA()
	stream(t, ctxA, srv.URL, a)
	refused := openStream(t, ctx, srv.URL, a)
	refused.Body.Close()
	g.Expect(refused.StatusCode).To(Equal(http.StatusServiceUnavailable), "a second stream of one caller")
	stream(t, ctx, srv.URL, b)
	refused = openStream(t, ctx, srv.URL, c)
	refused.Body.Close()
	g.Expect(refused.StatusCode).To(Equal(http.StatusServiceUnavailable), "a third stream in all")
	closeA()
	g.Eventually(func() int {
		resp := openStream(t, ctx, srv.URL, c)
		resp.Body.Close()
		return resp.StatusCode
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(http.StatusOK))

	// `gitsync ui` has one caller: its per-caller cap holds.
	local := startUI(t, env.Config, ui.Options{MaxStreamsPerCaller: 1})
	stream(t, ctx, local.URL, local.Token)
	refused = openStream(t, ctx, local.URL, local.Token)
	refused.Body.Close()
	g.Expect(refused.StatusCode).To(Equal(http.StatusServiceUnavailable))
}

// `gitsync ui`: the launch token, given once in the URL, becomes a cookie; a wrong one is
// refused; a Host header that names another site is refused, token or not.
func TestLaunchTokenAndHostCheck(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	g.Expect(srv.Token).To(HaveLen(64))
	g.Expect(startUI(t, env.Config, ui.Options{}).Token).NotTo(Equal(srv.Token), "a token per launch")

	resp, _ := call(t, "GET", srv.URL+"/apps/"+f.ns+"/web?token=wrong", "")
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(resp.Cookies()).To(BeEmpty())
	resp, _ = call(t, "GET", srv.LoginURL("/apps/"+f.ns+"/web"), "")
	g.Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
	g.Expect(resp.Header.Get("Location")).To(Equal("/apps/" + f.ns + "/web"))
	cookies := resp.Cookies()
	g.Expect(cookies).To(HaveLen(1))
	g.Expect(cookies[0].HttpOnly).To(BeTrue())
	req, _ := http.NewRequest("GET", srv.URL+"/api/apps/"+f.ns+"/web", nil)
	req.AddCookie(cookies[0])
	resp, err := plain.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	for host, want := range map[string]int{
		"evil.example:" + port:     http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io:" + port: http.StatusMisdirectedRequest,
		"localhost:" + port:        http.StatusOK,
		"127.0.0.1:" + port:        http.StatusOK,
	} {
		resp, _ := call(t, "GET", srv.URL+"/api/apps", srv.Token, "Host", host)
		g.Expect(resp.StatusCode).To(Equal(want), host)
	}
	// The operator's UI serves whatever name its ingress gives it.
	op := startUI(t, env.Config, ui.Options{Auth: ui.AuthKubernetes})
	resp, _ = call(t, "GET", op.URL+"/api/apps", "", "Host", "gitsync.example.com")
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
}

func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		host, listen string
		want         bool
	}{
		{"127.0.0.1:9080", "127.0.0.1", true},
		{"[::1]:9080", "::1", true},
		{"localhost:9080", "127.0.0.1", true},
		{"LOCALHOST.:9080", "127.0.0.1", true},
		{"app.localhost:9080", "127.0.0.1", true},
		{"10.1.2.3:9080", "0.0.0.0", true},
		{"workstation.lan:9080", "workstation.lan", true},
		{"workstation.lan:9080", "127.0.0.1", false},
		{"evil.example:9080", "127.0.0.1", false},
		{"localhost.evil.example", "127.0.0.1", false},
		{"", "127.0.0.1", false},
	} {
		if got := ui.HostAllowed(c.host, c.listen); got != c.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", c.host, c.listen, got, c.want)
		}
	}
}
