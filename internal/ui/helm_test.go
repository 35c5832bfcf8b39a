package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// The sources view lists HelmRepositories next to GitRepositories (kind, URL without
// its user info, readiness, the index digest short) and follows their changes live; an
// Application of a chart shows the chart and its version, and links to its source's row.
// No credential shows anywhere.
func TestBrowserHelmRepositorySourceAndChartApp(t *testing.T) {
	const chartPassword, urlPassword, valuesPassword = "chart-s3cret-7", "url-s3cret-9", "values-s3cret-3"
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t) // a GitRepository and its Application, in the same namespace
	repo := chartserver.NewRepo(t)
	repo.Username, repo.Password = "ann", chartPassword
	repo.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "chart-creds", Namespace: f.ns},
		Data: map[string][]byte{"username": []byte("ann"), "password": []byte(chartPassword), "ca.crt": repo.CA}})).To(Succeed())
	charts := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: f.ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: repo.URL, Interval: &metav1.Duration{Duration: time.Hour},
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "chart-creds"}},
	}
	g.Expect(env.Client.Create(ctx, charts)).To(Succeed())
	// A URL with a password in it (unreachable): shown without its user info.
	g.Expect(env.Client.Create(ctx, &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "inline", Namespace: f.ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: "https://bob:" + urlPassword + "@127.0.0.1:1/charts"},
	})).To(Succeed())
	chartApp := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "chart", Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
			Helm: &gitsyncv1.HelmSpec{Chart: "web", Version: ">=1.0.0",
				Values: &runtime.RawExtension{Raw: []byte(`{"db":{"password":"` + valuesPassword + `"},"replicas":2}`)}},
		},
	}
	g.Expect(env.Client.Create(ctx, chartApp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(chartApp), chartApp)).To(Succeed())
		g.Expect(chartApp.Status.LastAppliedRevision).To(Equal("web@1.0.0"))
		g.Expect(apimeta.IsStatusConditionTrue(chartApp.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(charts), charts)).To(Succeed())
	digest := charts.Status.Artifact.Digest

	srv := startUI(t, env.Config, ui.Options{})
	resp, body := get(t, srv.URL+"/api/sources")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var sources struct{ Items []ui.SourceRow }
	g.Expect(json.Unmarshal([]byte(body), &sources)).To(Succeed())
	g.Expect(sources.Items).To(ContainElement(And(HaveField("Kind", gitsyncv1.HelmRepositoryKind), HaveField("Name", "charts"),
		HaveField("Namespace", f.ns), HaveField("URL", repo.URL), HaveField("Ready", "True"),
		HaveField("Revision", digest[:len("sha256:")+12]), HaveField("RevisionFull", digest))))
	g.Expect(sources.Items).To(ContainElement(And(HaveField("Kind", gitsyncv1.GitRepositoryKind), HaveField("Name", "app-repo"))))

	bctx := browser.New(t, 1280, 900)
	shots := t.TempDir()
	row := `#sources-body tr[data-kind="HelmRepository"][data-namespace="` + f.ns + `"][data-name="charts"]`
	do(t, bctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/sources")), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))
	g.Expect(text(t, bctx, row)).To(And(ContainSubstring("HelmRepository"), ContainSubstring(repo.URL),
		ContainSubstring("True"), ContainSubstring(digest[:len("sha256:")+12])))
	inline := text(t, bctx, `#sources-body tr[data-namespace="`+f.ns+`"][data-name="inline"]`)
	g.Expect(inline).To(ContainSubstring("https://127.0.0.1:1/charts"))
	g.Expect(text(t, bctx, `#sources-body tr[data-kind="GitRepository"][data-namespace="`+f.ns+`"][data-name="app-repo"]`)).To(ContainSubstring(f.sha))
	screenshot(t, bctx, shots, "sources-helm")

	// Live: suspending the HelmRepository shows on its row without a reload.
	_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
	g.Expect(err).NotTo(HaveOccurred())
	base := client.MergeFrom(charts.DeepCopy())
	charts.Spec.Suspend = true
	g.Expect(env.Client.Patch(ctx, charts, base)).To(Succeed())
	do(t, bctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(row+" .badge.suspended")))
	notReloaded, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notReloaded).To(BeTrue(), "the page was reloaded")

	// The applications view shows the chart's revision whole; its page the chart, the
	// version and a link to the source's row.
	appRow := `tr[data-namespace="` + f.ns + `"][data-name="chart"]`
	do(t, bctx, 20*time.Second, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(appRow)))
	g.Expect(text(t, bctx, appRow)).To(And(ContainSubstring("Synced"), ContainSubstring("web@1.0.0")))
	do(t, bctx, 20*time.Second, chromedp.Click(chromedp.CSS(appRow+" a")), chromedp.WaitVisible(chromedp.CSS("#chart")))
	g.Expect(strings.Fields(text(t, bctx, "#chart"))).To(Equal([]string{"web", "1.0.0"}))
	g.Expect(text(t, bctx, "#source-link")).To(Equal("HelmRepository/" + f.ns + "/charts"))
	// The parameters: the range and the version it resolved to, the values' keys only.
	g.Expect(text(t, bctx, "#params")).To(And(ContainSubstring("range >=1.0.0 → resolved 1.0.0"), ContainSubstring(repo.URL)))
	g.Expect(text(t, bctx, "#param-values")).To(And(ContainSubstring("password: '***'"), ContainSubstring("replicas: '***'")))
	screenshot(t, bctx, shots, "application-chart")
	// A click through the DOM: a live update may re-render the link between a mouse
	// click's hit test and the click.
	_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.getElementById("source-link").click(), true)`))
	g.Expect(err).NotTo(HaveOccurred())
	do(t, bctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(row)))
	target, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(function(){
		var r = document.getElementById(decodeURIComponent(location.hash.slice(1)));
		return location.pathname + " " + (r ? r.dataset.kind + "/" + r.dataset.name : "none"); })()`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal("/sources HelmRepository/charts"))

	// No credential in any page or API answer.
	for _, path := range []string{"/sources", "/api/sources", "/", "/apps/" + f.ns + "/chart", "/api/apps/" + f.ns + "/chart"} {
		_, body := get(t, srv.URL+path)
		g.Expect(body).NotTo(ContainSubstring(chartPassword), path)
		g.Expect(body).NotTo(ContainSubstring(urlPassword), path)
		g.Expect(body).NotTo(ContainSubstring(valuesPassword), path)
	}
	html, err := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("html")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(html).NotTo(Or(ContainSubstring(chartPassword), ContainSubstring(urlPassword), ContainSubstring(valuesPassword)))
}

// Someone who may read GitRepositories but not HelmRepositories still gets the sources
// view, with the GitRepositories only (the cache never waits on a kind it cannot list).
func TestSourcesWithoutHelmRepositoryAccess(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	g.Expect(env.Client.Create(context.Background(), &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: f.ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: "https://127.0.0.1:1/charts"},
	})).To(Succeed())
	user := "gitonly-" + f.ns
	grantView(t, user, f.ns)
	srv := startUI(t, asUser(user), ui.Options{})
	c := httpc
	resp, err := c.Get(srv.URL + "/api/sources")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var sources struct{ Items []ui.SourceRow }
	g.Expect(json.NewDecoder(resp.Body).Decode(&sources)).To(Succeed())
	g.Expect(sources.Items).To(ConsistOf(And(HaveField("Kind", gitsyncv1.GitRepositoryKind), HaveField("Name", "app-repo"))))
}

func TestSourceURLsHideCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"https://bob:pw@charts.example.com/x":  "https://charts.example.com/x",
		"https://ghp_token@github.com/org/app": "https://github.com/org/app",
		"ssh://git@github.com/org/app":         "ssh://git@github.com/org/app",
		"ssh://git:pw@example.com/app":         "ssh://git@example.com/app",
		"git@github.com:org/app.git":           "git@github.com:org/app.git",
		"oci://registry.example.com/charts":    "oci://registry.example.com/charts",
	} {
		if got := ui.DisplayURL(raw); got != want {
			t.Errorf("DisplayURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
