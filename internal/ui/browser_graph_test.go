package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

const presyncHook = `apiVersion: v1
kind: ConfigMap
metadata:
  name: migrate
  annotations:
    gitsync.dev/hook: PreSync
data:
  step: migrate
`

// The graph: the Application, its objects with owner edges to their children (one tree,
// internal/tree's), the last run's hook with its phase, health and sync/drift per node;
// a node folds, filters keep matches, and a click opens the object as the list does.
func TestBrowserApplicationGraph(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1400, 900)
	f := newFixtureWith(t, map[string]string{"migrate.yaml": presyncHook})
	f.addChildren(t)
	f.setImage(t, "nginx:9.9")
	srv := startUI(t, env.Config, ui.Options{})
	dep := "Deployment/" + f.ns + "/web"
	node := func(id string) string { return `#graph g.gnode[data-id="` + id + `"]` }

	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=list"),
		chromedp.WaitVisible(chromedp.CSS(`button.node[data-id="`+dep+`"][data-drift]`)), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#view-graph")), chromedp.WaitVisible(chromedp.CSS(node(dep))))
	g.Expect(eval[bool](t, ctx, `document.getElementById("tree").hidden`)).To(BeTrue())

	// Every node of the list is in the graph, and the Application at its root.
	g.Expect(eval[int](t, ctx, `document.querySelectorAll("#graph g.gnode[data-id]").length`)).To(
		Equal(eval[int](t, ctx, `document.querySelectorAll("#tree button.node").length`) + 1))
	// Owner edges: Deployment → ReplicaSet → Pod, one column to the right each.
	xs := eval[[]float64](t, ctx, `["`+dep+`", "ReplicaSet/`+f.ns+`/web-7d9f", "Pod/`+f.ns+`/web-7d9f-abcde"].map(function (id) {
		return document.querySelector('#graph g.gnode[data-id="' + id + '"]').getCTM().e; })`)
	g.Expect(xs[1]).To(BeNumerically(">", xs[0]))
	g.Expect(xs[2]).To(BeNumerically(">", xs[1]))
	g.Expect(eval[int](t, ctx, `document.querySelectorAll("#graph path.edge").length`)).To(
		Equal(eval[int](t, ctx, `document.querySelectorAll("#graph g.gnode[data-id]").length`) - 1))
	// Health and drift per node, and the hook with its phase.
	g.Expect(eval[string](t, ctx, `document.querySelector('`+node(dep)+`').getAttribute("aria-label")`)).To(ContainSubstring("drift"))
	g.Expect(eval[string](t, ctx, `document.querySelector('`+node("ConfigMap/"+f.ns+"/settings")+`').getAttribute("aria-label")`)).To(
		Equal("ConfigMap settings, Healthy, Synced"))
	hook := node("ConfigMap/" + f.ns + "/migrate")
	g.Expect(eval[string](t, ctx, `document.querySelector('`+hook+`').getAttribute("class")`)).To(ContainSubstring("hook"))
	g.Expect(eval[string](t, ctx, `document.querySelector('`+hook+` .gstate').textContent`)).To(Equal("PreSync hook"))
	screenshot(t, ctx, t.TempDir(), "graph")

	// Fold the Deployment: its ReplicaSet and Pod go; unfold, they come back.
	fold := `#graph [data-fold="` + dep + `"]`
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(fold)))
	poll(t, ctx, 5*time.Second, `document.querySelector('#graph g.gnode[data-id^="Pod/"]') === null`)
	g.Expect(eval[string](t, ctx, `document.querySelector('`+fold+`').getAttribute("aria-expanded")`)).To(Equal("false"))
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(fold)))
	poll(t, ctx, 5*time.Second, `document.querySelector('#graph g.gnode[data-id^="Pod/"]') !== null`)

	// Filters: drifted only keeps the Deployment; a health filter keeps the parents dimmed.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#g-drift")))
	poll(t, ctx, 5*time.Second, `document.querySelectorAll("#graph g.gnode[data-id]").length === 2`)
	g.Expect(eval[string](t, ctx, `document.querySelectorAll("#graph g.gnode[data-id]")[1].dataset.id`)).To(Equal(dep))
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#g-drift")))
	_ = eval[bool](t, ctx, `(function(){ var s = document.getElementById("g-kind"); s.value = "Pod"; s.dispatchEvent(new Event("input")); return true; })()`)
	poll(t, ctx, 5*time.Second, `document.querySelectorAll("#graph g.gnode[data-id]").length === 4`)
	g.Expect(eval[string](t, ctx, `document.querySelector('`+node(dep)+`').getAttribute("class")`)).To(ContainSubstring("dim"))
	_ = eval[bool](t, ctx, `(function(){ var s = document.getElementById("g-kind"); s.value = ""; s.dispatchEvent(new Event("input")); return true; })()`)

	// Keyboard: Enter on a node opens it in the object panel, and in the address.
	_ = eval[bool](t, ctx, `(function(){ var n = document.querySelector('`+node(dep)+`'); n.focus();
		n.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true})); return true; })()`)
	poll(t, ctx, 60*time.Second, `document.getElementById("object").dataset.loaded === "`+dep+`"`)
	g.Expect(eval[string](t, ctx, `new URL(location.href).searchParams.get("object")`)).To(Equal(dep))
	poll(t, ctx, 5*time.Second, `document.querySelector('`+node(dep)+`').getAttribute("class").includes("selected")`)
	screenshot(t, ctx, t.TempDir(), "graph-selected")

	// A hook opens with what its run did.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(hook)))
	poll(t, ctx, 30*time.Second, `document.getElementById("object").dataset.loaded === "ConfigMap/`+f.ns+`/migrate"`)
	g.Expect(text(t, ctx, "#obj-note")).To(And(HavePrefix("A PreSync hook of the sync of main@sha1:"+f.sha), ContainSubstring("Succeeded")))
}
