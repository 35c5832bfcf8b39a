package ui_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// ?object=Kind/namespace/name opens that object; selecting another one puts it in the
// address. Times read "… ago" with the absolute time on hover, and the diff is coloured,
// unified or side by side.
func TestBrowserDeepLinksTimesAndDiffToggle(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1280, 900)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	f.setImage(t, "nginx:9.9")
	id := "Deployment/" + f.ns + "/web"

	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=list&object="+url.QueryEscape(id)))
	poll(t, ctx, 60*time.Second, `document.getElementById("object").dataset.loaded === "`+id+`"`)
	g.Expect(eval[string](t, ctx, `document.querySelector("button.node.selected").dataset.id`)).To(Equal(id))
	poll(t, ctx, 30*time.Second, `document.getElementById("obj-diff").textContent.includes("nginx:9.9")`)
	g.Expect(eval[string](t, ctx, `Array.from(document.querySelectorAll("#obj-diff .dl.del")).map(e => e.textContent).join("")`)).To(ContainSubstring("image: nginx:9.9"))

	// Side by side: live on the left, Git on the right, on the same row.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`input[name="diff-mode"][value="split"]`)))
	poll(t, ctx, 5*time.Second, `!document.getElementById("obj-diff-split").hidden && document.getElementById("obj-diff").hidden`)
	pair := eval[[]string](t, ctx, `(function(){ var td = Array.from(document.querySelectorAll("#obj-diff-split td.dl.del")).find(e => e.textContent.includes("nginx:9.9"));
		return [td.textContent, td.nextElementSibling.textContent, td.nextElementSibling.className]; })()`)
	g.Expect(pair[1]).To(ContainSubstring("image: nginx:1.0"))
	g.Expect(pair[2]).To(ContainSubstring("add"))
	screenshot(t, ctx, t.TempDir(), "diff-side-by-side")
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`input[name="diff-mode"][value="unified"]`)))
	poll(t, ctx, 5*time.Second, `document.getElementById("obj-diff-split").hidden && !document.getElementById("obj-diff").hidden`)

	// Selecting another node changes the address; the address opens it again.
	cm := "ConfigMap/" + f.ns + "/settings"
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button.node[data-id="`+cm+`"]`)))
	poll(t, ctx, 10*time.Second, `new URL(location.href).searchParams.get("object") === "`+cm+`"`)
	loc := eval[string](t, ctx, `location.href`)
	do(t, ctx, 20*time.Second, chromedp.Navigate(loc))
	poll(t, ctx, 60*time.Second, `document.getElementById("object").dataset.loaded === "`+cm+`"`)

	// The parameters say why the drift stays: self heal is off.
	g.Expect(text(t, ctx, "#param-selfheal")).To(HavePrefix("off: drift is reported"))
	g.Expect(text(t, ctx, "#param-prune")).To(HavePrefix("on:"))
	g.Expect(text(t, ctx, "#params")).To(ContainSubstring("branch main"))

	// Relative times, the absolute one as the title.
	tm := eval[[]string](t, ctx, `(function(){ var e = document.querySelector("#app-summary time"); return [e.textContent, e.title]; })()`)
	g.Expect(tm[0]).To(MatchRegexp(`^(just now|\d+ min ago|1 min ago)$`))
	g.Expect(tm[1]).To(MatchRegexp(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`))
}
