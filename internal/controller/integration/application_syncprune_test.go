package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// A sync request may turn pruning on or off for that sync only (gitsync.dev/sync-prune,
// set by `gitsync reconcile app NAME --prune=…` and the UI's sync option): with
// spec.prune false, a request with pruning deletes what left Git; with spec.prune true,
// a request without it keeps the object, and the next sync (no option) prunes it.
func TestSyncRequestPruneOption(t *testing.T) {
	request := func(f *appFixture, g Gomega, value string, prune *bool) {
		f.edit(g, "app", func(a *gitsyncv1.Application) {
			a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
			if prune != nil {
				a.Annotations[gitsyncv1.SyncPruneAnnotation] = gitsyncv1.PruneRequest(*prune, value)
			}
		})
	}
	// With autoSync off, a new revision waits for the request.
	waitOutOfSync := func(f *appFixture, g Gomega, sha string) {
		g.Eventually(func(g Gomega) *gitsyncv1.SyncInfo { return f.get(g, "app").Status.Sync }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).
			Should(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha}))
	}
	waitHandled := func(f *appFixture, g Gomega, value string) *gitsyncv1.Application {
		var app *gitsyncv1.Application
		g.Eventually(func(g Gomega) string {
			app = f.get(g, "app")
			return app.Status.LastHandledReconcileAt
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(value))
		return app
	}

	t.Run("on, this once, with spec.prune false", func(t *testing.T) {
		g := NewWithT(t)
		f, sha := newAppFixture(t, map[string]string{"keep.yaml": configMapYAML("keep", "1"), "gone.yaml": configMapYAML("gone", "1")})
		f.app("app", func(a *gitsyncv1.Application) { a.Spec.AutoSync = ptr.To(false) })
		request(f, g, "1", nil)
		f.waitApplied("app", sha)

		sha2 := f.repo.Commit("main", "remove gone", nil, "gone.yaml")
		waitOutOfSync(f, g, sha2)
		request(f, g, "2", ptr.To(true))
		app := f.waitApplied("app", sha2)
		g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(BeFalse())
		g.Expect(app.Status.History[0].Pruned).To(Equal(1))
		g.Expect(app.Spec.Prune).To(BeFalse())
	})

	t.Run("off, this once, with spec.prune true", func(t *testing.T) {
		g := NewWithT(t)
		f, sha := newAppFixture(t, map[string]string{"keep.yaml": configMapYAML("keep", "1"), "gone.yaml": configMapYAML("gone", "1")})
		f.app("app", func(a *gitsyncv1.Application) { a.Spec.AutoSync = ptr.To(false); a.Spec.Prune = true })
		request(f, g, "1", nil)
		f.waitApplied("app", sha)

		sha2 := f.repo.Commit("main", "remove gone", nil, "gone.yaml")
		waitOutOfSync(f, g, sha2)
		request(f, g, "2", ptr.To(false))
		app := f.waitAppliedKeeping("app", sha2)
		g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(BeTrue())
		g.Expect(app.Status.History[0].Pruned).To(BeZero())
		// Still in the inventory: the next sync prunes it.
		g.Expect(app.Status.Inventory.Entries).To(ContainElement(gitsyncv1.InventoryEntry{ID: f.ns + "_gone__ConfigMap", V: "v1"}))

		request(f, g, "3", nil)
		app = waitHandled(f, g, "3")
		g.Eventually(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "gone") }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
		g.Expect(app.Status.Inventory.Entries).To(ConsistOf(gitsyncv1.InventoryEntry{ID: f.ns + "_keep__ConfigMap", V: "v1"}))
	})
}

// A sync that waits for its PreSync hook between reconciles keeps its request's prune
// option until it ends (the request is handled when the run first yields): with
// spec.prune true and --prune=false, what left Git stays when the hook finishes.
func TestSyncPruneOptionOutlivesAWait(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{"keep.yaml": configMapYAML("keep", "1"), "gone.yaml": configMapYAML("gone", "1")}
	f, sha := newAppFixture(t, files)
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.AutoSync, a.Spec.Prune = ptr.To(false), true
		a.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "1"}
	})
	f.suspendAtEnd("app")
	f.waitApplied("app", sha)

	delete(files, "gone.yaml")
	files["migrate.yaml"] = jobYAML("name", "migrate", `gitsync.dev/hook: PreSync`)
	sha2 := f.repo.Commit("main", "remove gone, add a hook", files, "gone.yaml")
	g.Eventually(func(g Gomega) *gitsyncv1.SyncInfo { return f.get(g, "app").Status.Sync }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HaveField("Revision", "main@sha1:"+sha2))
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "2", gitsyncv1.SyncPruneAnnotation: gitsyncv1.PruneRequest(false, "2")}
	})
	f.waitHookJob("app", "migrate")
	g.Eventually(func(g Gomega) *gitsyncv1.SyncProgress { return f.get(g, "app").Status.SyncProgress }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HaveField("Prune", HaveValue(BeFalse())))
	g.Expect(f.get(g, "app").Status.LastHandledReconcileAt).To(Equal("2"))
	g.Expect(kubelet.FinishJob(context.Background(), env.Client, f.ns, "migrate", true)).To(Succeed())
	app := f.waitAppliedKeeping("app", sha2)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(BeTrue())
	g.Expect(app.Status.History[0].Pruned).To(BeZero())
	g.Expect(app.Status.Inventory.Entries).To(ContainElement(gitsyncv1.InventoryEntry{ID: f.ns + "_gone__ConfigMap", V: "v1"}))
}

// waitAppliedKeeping waits until the Application applied sha but a sync request kept what
// left Git from the prune: OutOfSync at sha, Ready=False/PruneSkipped (what waitApplied,
// Ready and Synced, said of it before the status told the truth).
func (f *appFixture) waitAppliedKeeping(name, sha string) *gitsyncv1.Application {
	f.t.Helper()
	var app *gitsyncv1.Application
	NewWithT(f.t).Eventually(func(g Gomega) {
		app = f.get(g, name)
		ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(gitsyncv1.PruneSkippedReason), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		g.Expect(app.Status.Sync).To(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha}))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return app
}
