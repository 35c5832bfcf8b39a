package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// A person opening an Application synced to a Cluster sees which Cluster, a healthy
// tree read there, and the remote object's live manifest in the object panel.
func TestBrowserApplicationOnAClusterShowsItsClusterAndObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1400, 900)
	r := newRemoteApp(t)
	cm := &corev1.ConfigMap{}
	g.Expect(r.remote.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "settings"}, cm)).To(Succeed())
	cm.Data["greeting"] = "edited-remotely"
	g.Expect(r.remote.Update(context.Background(), cm)).To(Succeed())
	srv := startUI(t, env.Config, ui.Options{Diff: operations.ObjectDiffsFromSource})

	node := `#tree button.node[data-id="ConfigMap/` + r.ns + `/settings"]`
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+r.ns+"/edge-app")), chromedp.WaitVisible(chromedp.CSS("#target-cluster")))
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.URL+"/apps/"+r.ns+"/edge-app?view=list"), chromedp.WaitVisible(chromedp.CSS(node)))
	g.Expect(text(t, ctx, "#target-cluster")).To(Equal(r.ns + "/edge"))
	g.Expect(eval[string](t, ctx, `document.querySelector('`+node+`').dataset.health`)).To(Equal("Healthy"))
	do(t, ctx, 20*time.Second, chromedp.Click(chromedp.CSS(node)), chromedp.WaitVisible(chromedp.CSS("#object")))
	g.Eventually(func() string { return text(t, ctx, "#obj-live") }).WithTimeout(20 * time.Second).Should(ContainSubstring("edited-remotely"))
	screenshot(t, ctx, t.TempDir(), "app-on-cluster")
}
