package ui_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// "Sync this": with autoSync off, a new revision changes two ConfigMaps; the object
// panel of one offers it, and it applies that one only. The page then shows the
// selective sync (which object, which revision), keeps showing OutOfSync, and offers
// "Sync this" for the other, still at the old revision; the preview offers it for an
// object new in the revision. A request naming an object outside the Application is
// refused with the reason. Suspended, "Sync this" is disabled with the reason.
func TestBrowserSyncThisObject(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	ctx := browser.New(t, 1280, 900)
	configMap := func(name, greeting string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  greeting: " + greeting + "\n"
	}
	f := newFixtureWith(t, map[string]string{"other.yaml": configMap("other", "hello")})
	key := client.ObjectKeyFromObject(f.app)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.AutoSync = ptr.To(false)
	g.Expect(env.Client.Patch(bg, app, base)).To(Succeed())
	// Both ConfigMaps change in Git; the source fetches it now; the revision waits.
	sha := f.repo.Commit("main", "both change", map[string]string{
		"app/configmap.yaml": configMap("settings", "bonjour"), "app/other.yaml": configMap("other", "bonjour"),
		"app/fresh.yaml": configMap("fresh", "new")})
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(bg, client.ObjectKey{Namespace: f.ns, Name: "app-repo"}, repo)).To(Succeed())
	base = client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "now"}
	g.Expect(env.Client.Patch(bg, repo, base)).To(Succeed())
	rev := "main@sha1:" + sha
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
		g.Expect(app.Status.Sync).NotTo(BeNil())
		return app.Status.Sync.Status + " " + app.Status.Sync.Revision
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(gitsyncv1.SyncStatusOutOfSync + " " + rev))
	greeting := func(g Gomega, name string) string {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(bg, client.ObjectKey{Namespace: f.ns, Name: name}, cm)).To(Succeed())
		return cm.Data["greeting"]
	}

	srv := startUI(t, env.Config, ui.Options{})
	shots := t.TempDir()
	settings, other := "ConfigMap/"+f.ns+"/settings", "ConfigMap/"+f.ns+"/other"
	do(t, ctx, 30*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=list&object="+url.QueryEscape(settings)),
		chromedp.WaitVisible(chromedp.CSS("#live.on")), chromedp.WaitVisible(chromedp.CSS("#obj-sync")))
	g.Expect(text(t, ctx, "#obj-note")).To(ContainSubstring("configured"))
	g.Expect(eval[string](t, ctx, `getComputedStyle(document.getElementById("obj-sync")).fontFamily`)).To(
		Equal(eval[string](t, ctx, `getComputedStyle(document.querySelector('button[data-action="sync"]')).fontFamily`)))
	screenshot(t, ctx, shots, "sync-this-offered")

	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#obj-sync")))
	poll(t, ctx, 60*time.Second, `document.getElementById("action-log").textContent.includes("sync of `+settings+` requested (selective: no prune)")`)
	g.Eventually(func(g Gomega) *gitsyncv1.SelectiveSyncStatus {
		g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
		return app.Status.SelectiveSync
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(And(
		HaveField("Revision", rev), HaveField("Objects", []string{settings})))
	g.Expect(greeting(g, "settings")).To(Equal("bonjour"))
	g.Expect(greeting(g, "other")).To(Equal("hello"))
	g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusOutOfSync))

	// The page shows it live: what was applied from which revision, still OutOfSync, the
	// object marked in the tree; "Sync this" goes for it (a sync would leave it unchanged).
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#selective-banner")))
	g.Expect(text(t, ctx, "#selective-banner")).To(And(ContainSubstring(settings), ContainSubstring(rev), ContainSubstring("OutOfSync")))
	g.Expect(text(t, ctx, "#selective-banner")).NotTo(ContainSubstring(other))
	g.Expect(text(t, ctx, "#app-summary dl.summary")).To(ContainSubstring("OutOfSync"))
	g.Expect(text(t, ctx, "h1 .state")).To(ContainSubstring("PartiallySynced"))
	g.Expect(text(t, ctx, "ul.conditions")).To(ContainSubstring("A selective sync applied part of the revision"))
	g.Expect(eval[bool](t, ctx, `document.getElementById("failing-banner") === null`)).To(BeTrue(), "a selective sync is no failure")
	poll(t, ctx, 20*time.Second, `document.querySelector('button.node[data-id="`+settings+`"] .badge.selective') !== null`)
	g.Expect(eval[bool](t, ctx, `document.querySelector('button.node[data-id="`+other+`"] .badge.selective') === null`)).To(BeTrue())
	poll(t, ctx, 20*time.Second, `document.getElementById("obj-actions").hidden`)
	screenshot(t, ctx, shots, "sync-this-done")

	// The other ConfigMap still differs from Git: its panel offers "Sync this".
	do(t, ctx, 10*time.Second, chromedp.Click(chromedp.CSS(`button.node[data-id="`+other+`"]`)))
	poll(t, ctx, 30*time.Second, `document.getElementById("object").dataset.loaded === "`+other+`" && !document.getElementById("obj-actions").hidden`)
	g.Expect(eval[string](t, ctx, `document.getElementById("obj-sync").dataset.object`)).To(Equal(other))

	// A request naming an object outside the Application is refused, with the reason.
	status := eval[string](t, ctx, `fetch("/api/apps/`+f.ns+`/web/sync", {method: "POST", headers: {"X-CSRF-Token":
		document.querySelector('meta[name="csrf-token"]').content, "Content-Type": "application/json"},
		body: JSON.stringify({resources: ["ConfigMap/`+f.ns+`/elsewhere"]})}).then(r => r.json().then(o => r.status + " " + o.error))`)
	g.Expect(status).To(And(HavePrefix("400 "), ContainSubstring("ConfigMap/"+f.ns+"/elsewhere: not an object of Application "+f.ns+"/web")))
	g.Expect(greeting(g, "other")).To(Equal("hello"))

	// An object new in the revision has no panel yet: the preview offers "Sync this".
	fresh := "ConfigMap/" + f.ns + "/fresh"
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="preview"]`)))
	oneOf := `#preview-list button[data-action="sync-object"][data-object="` + fresh + `"]`
	poll(t, ctx, 60*time.Second, `document.querySelector('`+oneOf+`') !== null`)
	g.Expect(text(t, ctx, "#preview-list")).To(ContainSubstring(fresh + " — created"))
	screenshot(t, ctx, shots, "sync-this-preview")
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(oneOf)))
	poll(t, ctx, 60*time.Second, `document.getElementById("action-log").textContent.includes("sync of `+fresh+` requested (selective: no prune)")`)
	g.Eventually(func(g Gomega) string { return greeting(g, "fresh") }).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("new"))
	g.Eventually(func(g Gomega) []string {
		g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
		g.Expect(app.Status.SelectiveSync).NotTo(BeNil())
		return app.Status.SelectiveSync.Objects
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal([]string{fresh}))
	g.Expect(greeting(g, "other")).To(Equal("hello"))
	g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusOutOfSync))

	// Suspended: "Sync this" is disabled with the reason, as Sync is.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="suspend"]`)))
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#why-disabled")))
	poll(t, ctx, 10*time.Second, `document.getElementById("obj-sync").disabled`)
	g.Expect(eval[string](t, ctx, `document.getElementById("obj-sync").getAttribute("aria-describedby")`)).To(Equal("why-disabled"))
}
