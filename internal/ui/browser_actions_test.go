package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// Actions leave a lasting result (not wiped by live updates); a sync can be previewed
// (the diff of `gitsync diff`, coloured) and asked to run the hooks again; a history row
// rolls back (spec.pinnedRevision, a banner says so); a suspended Application's sync,
// preview and rollback are disabled with the reason, and refused by the server.
func TestBrowserActionsPreviewRollbackAndSuspended(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	ctx := browser.New(t, 1280, 900)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	shots := t.TempDir()
	key := client.ObjectKeyFromObject(f.app)
	dep := `button.node[data-id="Deployment/` + f.ns + `/web"]`

	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=list"), chromedp.WaitVisible(chromedp.CSS(dep)),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))
	f.setImage(t, "nginx:9.9")
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(dep+" .badge.drifted")))

	// Preview: the Deployment would be configured back to Git's image, in colour.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="preview"]`)))
	poll(t, ctx, 60*time.Second, `!document.getElementById("preview").hidden && document.querySelectorAll("#preview-list details").length > 0`)
	g.Expect(text(t, ctx, "#preview-list")).To(And(ContainSubstring("Deployment/"+f.ns+"/web"), ContainSubstring("configured")))
	g.Expect(eval[string](t, ctx, `Array.from(document.querySelectorAll("#preview-list .dl.add")).map(e => e.textContent).join("")`)).To(ContainSubstring("image: nginx:1.0"))
	g.Expect(eval[string](t, ctx, `getComputedStyle(document.querySelector("#preview-list .dl.add")).backgroundColor`)).To(Equal("rgb(218, 251, 225)"))
	// Its own toggle: side by side, and the object panel's toggle follows.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`input[name="preview-diff-mode"][value="split"]`)))
	poll(t, ctx, 5*time.Second, `!document.querySelector("#preview-list .diff-split").hidden && document.querySelector("#preview-list pre.diff").hidden`)
	g.Expect(eval[bool](t, ctx, `document.querySelector('input[name="diff-mode"][value="split"]').checked`)).To(BeTrue())
	screenshot(t, ctx, shots, "sync-preview")

	// Sync with the hooks: the result stays through the live updates the sync causes.
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#opt-hooks")), chromedp.Click(chromedp.CSS(`button[data-action="sync"]`)))
	poll(t, ctx, 10*time.Second, `document.getElementById("action-log").textContent.includes("sync requested, hooks included")`)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RunHooksAnnotation]).To(Equal(app.Annotations[gitsyncv1.RequestedAtAnnotation]))
	do(t, ctx, 30*time.Second, chromedp.WaitNotPresent(chromedp.CSS(dep+" .badge.drifted")))
	// A later change (drift again) refreshes the page live: the result stays.
	before := eval[string](t, ctx, `document.body.dataset.updated || ""`)
	f.setImage(t, "nginx:8.8")
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(dep+" .badge.drifted")))
	poll(t, ctx, 10*time.Second, `(document.body.dataset.updated || "") !== "`+before+`"`)
	g.Expect(text(t, ctx, "#action-log")).To(ContainSubstring("sync requested, hooks included"))

	// Rollback from the history row.
	rev := app.Status.History[0].Revision
	_ = eval[bool](t, ctx, `window.confirm = function () { return true; }, true`)
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="rollback"][data-revision="`+rev+`"]`)))
	poll(t, ctx, 10*time.Second, `document.getElementById("action-log").textContent.includes("pinned to `+rev+`")`)
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#pinned-banner")))
	g.Expect(text(t, ctx, "#pinned-banner")).To(ContainSubstring(rev))
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Spec.PinnedRevision).To(Equal(rev))
	screenshot(t, ctx, shots, "rolled-back")

	// Suspend: sync, preview and rollback are disabled with the reason...
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="suspend"]`)))
	do(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#why-disabled")))
	g.Expect(eval[bool](t, ctx, `document.querySelector('button[data-action="sync"]').disabled &&
		document.querySelector('button[data-action="preview"]').disabled &&
		document.querySelector('button[data-action="rollback"]').disabled`)).To(BeTrue())
	g.Expect(eval[string](t, ctx, `document.querySelector('button[data-action="sync"]').getAttribute("aria-describedby")`)).To(Equal("why-disabled"))
	g.Expect(text(t, ctx, "#why-disabled")).To(ContainSubstring("suspended"))
	g.Expect(text(t, ctx, "#action-log")).To(ContainSubstring("suspend requested"))
	screenshot(t, ctx, shots, "suspended")
	// ... and the server refuses them, leaving no request behind to fire on resume.
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	requested := app.Annotations[gitsyncv1.RequestedAtAnnotation]
	status := eval[string](t, ctx, `fetch("/api/apps/`+f.ns+`/web/sync", {method: "POST", headers: {"X-CSRF-Token":
		document.querySelector('meta[name="csrf-token"]').content}}).then(r => r.json().then(o => r.status + " " + o.error))`)
	g.Expect(status).To(And(HavePrefix("409 "), ContainSubstring("suspended")))
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(requested))
}

// The sync's prune option: unticked as spec.prune is (off here), the preview lists no
// prune; ticked, the preview lists what left Git as pruned, and the sync prunes it this
// once (spec.prune stays off). The option outlives the page's live updates.
func TestBrowserSyncPruneOption(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	ctx := browser.New(t, 1280, 900)
	f := newFixture(t)
	key := client.ObjectKeyFromObject(f.app)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.Prune, app.Spec.AutoSync = false, ptr.To(false)
	g.Expect(env.Client.Patch(bg, app, base)).To(Succeed())
	// Git drops the ConfigMap; the source fetches it now; the new revision waits (autoSync off).
	sha := f.repo.Commit("main", "settings leave", nil, "app/configmap.yaml")
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(bg, client.ObjectKey{Namespace: f.ns, Name: "app-repo"}, repo)).To(Succeed())
	base = client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "now"}
	g.Expect(env.Client.Patch(bg, repo, base)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
		g.Expect(app.Status.Sync).NotTo(BeNil())
		return app.Status.Sync.Status + " " + app.Status.Sync.Revision
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(gitsyncv1.SyncStatusOutOfSync + " main@sha1:" + sha))

	srv := startUI(t, env.Config, ui.Options{})
	settings := "ConfigMap/" + f.ns + "/settings"
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")), chromedp.WaitVisible(chromedp.CSS("#opt-prune")),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))
	g.Expect(eval[bool](t, ctx, `document.getElementById("opt-prune").checked`)).To(BeFalse())
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="preview"]`)))
	poll(t, ctx, 60*time.Second, `!document.getElementById("preview").hidden`)
	g.Expect(text(t, ctx, "#preview")).NotTo(ContainSubstring(settings))

	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#opt-prune")), chromedp.Click(chromedp.CSS(`button[data-action="preview"]`)))
	poll(t, ctx, 60*time.Second, `document.getElementById("preview-list").textContent.includes(`+"`"+settings+" — pruned`)")
	g.Expect(text(t, ctx, "#preview-list")).To(ContainSubstring("Git no longer holds it: the sync deletes it."))
	screenshot(t, ctx, t.TempDir(), "sync-prune-preview")
	// A live update (an unrelated annotation) leaves the ticked option as it was.
	before := eval[string](t, ctx, `document.body.dataset.updated || ""`)
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	base = client.MergeFrom(app.DeepCopy())
	app.Annotations = map[string]string{"touch": "1"}
	g.Expect(env.Client.Patch(bg, app, base)).To(Succeed())
	poll(t, ctx, 10*time.Second, `(document.body.dataset.updated || "") !== "`+before+`"`)
	g.Expect(eval[bool](t, ctx, `document.getElementById("opt-prune").checked`)).To(BeTrue())

	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="sync"]`)))
	poll(t, ctx, 10*time.Second, `document.getElementById("action-log").textContent.includes("sync requested, pruning this once")`)
	g.Eventually(func(g Gomega) bool {
		err := env.Client.Get(bg, client.ObjectKey{Namespace: f.ns, Name: "settings"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())
	// The prune lands before the sync's status does: wait for the status.
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
		return app.Status.LastAppliedRevision
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("main@sha1:" + sha))
	g.Expect(app.Spec.Prune).To(BeFalse())
}
