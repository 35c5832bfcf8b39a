package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// overflow names what sticks out of the window (outside scrolling boxes), "" when the
// page is no wider than the window.
const overflow = `(function(){
	if (document.scrollingElement.scrollWidth <= window.innerWidth) return "";
	var out = [];
	document.querySelectorAll("body *").forEach(function (e) {
		if (e.getBoundingClientRect().right > window.innerWidth + 1 && !(e.parentElement && e.parentElement.closest(".scroll, pre, .graph-wrap, .diff-split")))
			out.push(e.tagName + "." + e.getAttribute("class") + "#" + e.id + ":" + Math.round(e.getBoundingClientRect().right));
	});
	return "page " + document.scrollingElement.scrollWidth + "px, window " + window.innerWidth + "px: " + out.slice(0, 5).join(", "); })()`

// At 390 px the application page, with its banners, actions, parameters, history and
// the graph, is no wider than the window; at 1400 px the sources page gives its message
// column room to read.
func TestBrowserLayoutNarrowAppAndWideSources(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	ctx := browser.New(t, 390, 844)
	f := newFixtureWith(t, map[string]string{"migrate.yaml": presyncHook})
	f.addChildren(t)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(bg, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.PinnedRevision = app.Status.LastAppliedRevision
	g.Expect(env.Client.Patch(bg, app, base)).To(Succeed())
	f.breakPath(t)
	srv := startUI(t, env.Config, ui.Options{})

	do(t, ctx, 20*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")),
		chromedp.WaitVisible(chromedp.CSS("#failing-banner")), chromedp.WaitVisible(chromedp.CSS("#pinned-banner")),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button.node[data-id="Deployment/`+f.ns+`/web"]`)))
	poll(t, ctx, 60*time.Second, `document.getElementById("object").dataset.loaded === "Deployment/`+f.ns+`/web"`)
	g.Expect(eval[string](t, ctx, overflow)).To(BeEmpty(), "the app page is wider than 390 px")
	screenshot(t, ctx, t.TempDir(), "application-390")
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#view-graph")), chromedp.WaitVisible(chromedp.CSS("#graph svg")))
	g.Expect(eval[string](t, ctx, overflow)).To(BeEmpty(), "the graph view is wider than 390 px")
	do(t, ctx, 10*time.Second, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#apps-body tr.failing")))
	g.Expect(eval[string](t, ctx, overflow)).To(BeEmpty(), "the list is wider than 390 px")

	// A source whose message is long (an unreachable URL): at 1400 px its message
	// column is at least 30 characters wide.
	bad := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "unreachable-repository-with-a-long-name", Namespace: f.ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://127.0.0.1:1/some/organisation/with-a-long-repository-name.git",
			Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}}}
	g.Expect(env.Client.Create(bg, bad)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(bg, client.ObjectKeyFromObject(bad), bad)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionFalse(bad.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	row := `#sources-body tr[data-name="` + bad.Name + `"]`
	do(t, ctx, 10*time.Second, chromedp.EmulateViewport(1400, 900), chromedp.Navigate(srv.URL+"/sources"), chromedp.WaitVisible(chromedp.CSS(row)))
	widths := eval[[]float64](t, ctx, `(function(){ var td = document.querySelector('`+row+` td.msg');
		var ch = parseFloat(getComputedStyle(td).fontSize) * 0.5;
		return [td.getBoundingClientRect().width, ch * 30, td.getBoundingClientRect().right, window.innerWidth]; })()`)
	g.Expect(widths[0]).To(BeNumerically(">=", widths[1]), "message column %.0f px", widths[0])
	g.Expect(widths[2]).To(BeNumerically("<=", widths[3]), "the message column is outside the window")
	g.Expect(eval[string](t, ctx, overflow)).To(BeEmpty())
	screenshot(t, ctx, t.TempDir(), "sources-1400")
}
