package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// shownView says which view of the resources the page shows ("graph" or "list"), and
// checks that the toggle's buttons say the same.
func shownView(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `(function(){
		var graph = !document.getElementById("graph-view").hidden, list = !document.getElementById("tree").hidden;
		var pressed = document.getElementById("view-graph").getAttribute("aria-pressed") === "true";
		if (graph === list || pressed !== graph) return "inconsistent";
		return graph ? "graph" : "list"; })()`)
}

// An application opens in the graph where the graph fits the screen, and in the list
// where it does not (a narrow window, a short one); the list is one click away, and the
// choice stays in the address (?view=list), so a reload keeps it.
func TestBrowserGraphIsTheDefaultViewWhereItFits(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1400, 900)
	f := newFixture(t)
	f.addChildren(t)
	srv := startUI(t, env.Config, ui.Options{})
	page := srv.URL + "/apps/" + f.ns + "/web"
	pod := `#graph g.gnode[data-id="Pod/` + f.ns + `/web-7d9f-abcde"]`

	// Six nodes, three levels: the graph fits 1400 × 900, and it is what opens.
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")))
	poll(t, ctx, 20*time.Second, `document.readyState === "complete"`)
	g.Expect(shownView(t, ctx)).To(Equal("graph"))
	do(t, ctx, 5*time.Second, chromedp.WaitVisible(chromedp.CSS(pod)))
	g.Expect(eval[string](t, ctx, `new URL(location.href).searchParams.get("view") || ""`)).To(BeEmpty())
	screenshot(t, ctx, t.TempDir(), "default-graph")

	// One click to the list, which the address keeps: a reload opens the list again.
	list := `#tree button.node[data-id="Pod/` + f.ns + `/web-7d9f-abcde"]`
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#view-list")), chromedp.WaitVisible(chromedp.CSS(list)))
	g.Expect(shownView(t, ctx)).To(Equal("list"))
	g.Expect(eval[string](t, ctx, `new URL(location.href).searchParams.get("view")`)).To(Equal("list"))
	do(t, ctx, 20*time.Second, chromedp.Navigate(eval[string](t, ctx, `location.href`)), chromedp.WaitVisible(chromedp.CSS(list)))
	g.Expect(shownView(t, ctx)).To(Equal("list"))
	// Selecting an object keeps the view in the address.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(list)))
	poll(t, ctx, 10*time.Second, `new URL(location.href).searchParams.get("object") === "Pod/`+f.ns+`/web-7d9f-abcde"`)
	g.Expect(eval[string](t, ctx, `new URL(location.href).searchParams.get("view")`)).To(Equal("list"))
	// And back to the graph, which the address keeps too.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#view-graph")), chromedp.WaitVisible(chromedp.CSS(pod)))
	g.Expect(eval[string](t, ctx, `new URL(location.href).searchParams.get("view")`)).To(Equal("graph"))

	// A window too narrow for its four columns, or too short for its six rows: the list.
	do(t, ctx, 20*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(list)))
	g.Expect(shownView(t, ctx)).To(Equal("list"))
	do(t, ctx, 20*time.Second, chromedp.EmulateViewport(1400, 300), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(list)))
	g.Expect(shownView(t, ctx)).To(Equal("list"))
	// ... unless the address asks for the graph.
	do(t, ctx, 20*time.Second, chromedp.Navigate(page+"?view=graph"), chromedp.WaitVisible(chromedp.CSS(pod)))
	g.Expect(shownView(t, ctx)).To(Equal("graph"))
}
