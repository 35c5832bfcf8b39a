package ui_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// screenshot saves the whole page as a PNG under dir (the test's temp dir), and also
// under $UI_SCREENSHOTS when set, so a person can look at it.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("UI_SCREENSHOTS"); keep != "" {
		_ = os.MkdirAll(keep, 0o755)
		_ = os.WriteFile(filepath.Join(keep, name+".png"), png, 0o644)
	}
	t.Logf("screenshot: %s", p)
}

// text reads the visible text of the first element sel matches, waiting up to 10s for
// one to exist. It queries and reads in one evaluation: a live update may replace the
// node between a query and a read by node id (CDP's "No node with given id found").
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q, _ := json.Marshal(sel)
	expr := `(() => { const e = document.querySelector(` + string(q) + `); return e === null ? null : e.innerText; })()`
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](expr))
		if err == nil && s != nil {
			return *s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("reading %s: %v (no element)", sel, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func do(t *testing.T, ctx context.Context, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// poll waits until the JavaScript expression is true.
func poll(t *testing.T, ctx context.Context, timeout time.Duration, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

func TestBrowserApplicationTreeDiffAndLiveDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1280, 900)
	f := newFixture(t)
	f.addChildren(t)
	srv := startUI(t, env.Config, ui.Options{})
	shots := t.TempDir()

	// The applications page lists the app, synced.
	row := `tr[data-namespace="` + f.ns + `"][data-name="web"]`
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/")), chromedp.WaitVisible(chromedp.CSS(row)))
	g.Expect(text(t, ctx, row)).To(And(ContainSubstring("Synced"), ContainSubstring(f.sha[:7])))
	do(t, ctx, 5*time.Second, chromedp.WaitVisible(chromedp.CSS("#live.on")))
	screenshot(t, ctx, shots, "applications")

	// Its page: the tree with the Deployment → ReplicaSet → Pod, in the list (the graph,
	// which fits this window, is what opens: the list is a click away).
	dep := `button.node[data-id="Deployment/` + f.ns + `/web"]`
	do(t, ctx, 20*time.Second, chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.CSS("#view-list")))
	poll(t, ctx, 20*time.Second, `document.readyState === "complete"`)
	do(t, ctx, 20*time.Second, chromedp.Click(chromedp.CSS("#view-list")), chromedp.WaitVisible(chromedp.CSS(dep)),
		chromedp.WaitVisible(chromedp.CSS(`button.node[data-id="Pod/`+f.ns+`/web-7d9f-abcde"]`)),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))
	// Mark the document: a reload would lose the mark.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
	g.Expect(err).NotTo(HaveOccurred())
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(dep)))
	poll(t, ctx, 30*time.Second, `document.getElementById("object").dataset.loaded === "Deployment/`+f.ns+`/web"`)
	g.Expect(text(t, ctx, "#obj-note")).To(Equal("Equal to Git."))
	g.Expect(text(t, ctx, "#obj-live")).To(ContainSubstring("image: nginx:1.0"))

	// kubectl set image: the drift shows on the node at once (well under 1 s here, logged;
	// the bound leaves room for -race on 2 cores: speed targets live in benchmarks),
	// without a reload...
	drifted := dep + ` .badge.drifted`
	f.setImage(t, "nginx:9.9")
	start := time.Now()
	do(t, ctx, 5*time.Second, chromedp.WaitVisible(chromedp.CSS(drifted)))
	g.Expect(time.Since(start)).To(BeNumerically("<", liveBound), "drift took %s to show", time.Since(start))
	t.Logf("drift visible after %s", time.Since(start))
	// ... and the open object's diff follows.
	poll(t, ctx, 30*time.Second, `document.getElementById("obj-diff").textContent.includes("image: nginx:9.9")`)
	diff := text(t, ctx, "#obj-diff")
	g.Expect(diff).To(ContainSubstring("-      - image: nginx:9.9"))
	g.Expect(diff).To(ContainSubstring("+      - image: nginx:1.0"))
	g.Expect(text(t, ctx, "#drift-h + .scroll table")).To(ContainSubstring("kubectl-set"))
	screenshot(t, ctx, shots, "application-drift")

	// Corrected by "Sync now" (the page's action: a requested-at patch; self-heal is off
	// here): the marker goes, again without a reload.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="sync"]`)))
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err = chromedp.Run(pctx, chromedp.Poll[bool](`document.querySelector('`+drifted+`') === null`))
	cancel()
	if err != nil {
		app := &gitsyncv1.Application{}
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)
		t.Fatalf("drift marker still shown: %v; drift in the API: %+v", err, app.Status.Drift)
	}
	g.Expect(text(t, ctx, "#drift-count")).To(Equal("0"))
	notReloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notReloaded).To(BeTrue(), "the page was reloaded")

	// Keyboard: the tree's nodes take focus and arrow keys move it.
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){
		var nodes = document.querySelectorAll("button.node"); nodes[0].focus();
		document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowDown", bubbles: true}));
		return document.activeElement.dataset.id; })()`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(focused).NotTo(BeEmpty())

	// A narrow window: one column, nothing wider than the screen.
	do(t, ctx, 10*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.URL+"/apps/"+f.ns+"/web"), chromedp.WaitVisible(chromedp.CSS(dep)))
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){
		if (document.documentElement.scrollWidth <= window.innerWidth + 1) return "";
		var out = [];
		document.querySelectorAll("body *").forEach(function (e) {
			if (e.getBoundingClientRect().right > window.innerWidth + 1 && !(e.parentElement && e.parentElement.closest(".scroll, pre"))) out.push(e.tagName + "." + e.className + "#" + e.id + ":" + Math.round(e.getBoundingClientRect().right));
		});
		return "page " + document.documentElement.scrollWidth + "px, window " + window.innerWidth + "px: " + out.slice(0, 5).join(", "); })()`))
	g.Expect(err).NotTo(HaveOccurred())
	screenshot(t, ctx, shots, "application-narrow")
	g.Expect(wide).To(BeEmpty(), "the page is wider than a narrow window")

	do(t, ctx, 10*time.Second, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/sources"), chromedp.WaitVisible(chromedp.CSS("#sources-body tr")))
	g.Expect(text(t, ctx, "#sources-body")).To(ContainSubstring(f.ns))
	screenshot(t, ctx, shots, "sources")
	entries, _ := os.ReadDir(shots)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	g.Expect(strings.Join(names, " ")).To(ContainSubstring("application-drift.png"))
}
