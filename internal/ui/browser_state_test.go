package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// eval runs a JavaScript expression in the page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// breakPath points the fixture's Application at a path Git does not hold, and waits
// until it is not Ready: its last sync (Succeeded, Healthy) stays in its history.
func (f *fixture) breakPath(t *testing.T) *gitsyncv1.Application {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.Path = "./missing"
	g.Expect(env.Client.Patch(ctx, app, base)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionFalse(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return app
}

// A failing Application's state dominates its row and its page: a red Failed/Stalled
// badge with the reason, the message in the row and in a banner, and no green Healthy or
// Succeeded beside it. A read-only UI says so and shows no actions.
func TestBrowserFailingAppDominatesAndReadOnlyBanner(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1400, 900)
	f := newFixture(t)
	app := f.breakPath(t)
	ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
	srv := startUI(t, env.Config, ui.Options{})

	row := `tr[data-namespace="` + f.ns + `"][data-name="web"]`
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/")), chromedp.WaitVisible(chromedp.CSS(row+".failing")))
	state := text(t, ctx, row+" td.state")
	g.Expect(state).To(Or(ContainSubstring("Failed"), ContainSubstring("Stalled")))
	g.Expect(state).To(ContainSubstring(ready.Reason))
	g.Expect(text(t, ctx, row+" td.msg")).To(ContainSubstring(ready.Reason))
	g.Expect(eval[int](t, ctx, `document.querySelectorAll('`+row+` .badge.healthy, `+row+` .badge.succeeded').length`)).To(Equal(0),
		"a green badge stands beside the failure")
	g.Expect(eval[string](t, ctx, `getComputedStyle(document.querySelector('`+row+` td.state .badge')).backgroundColor`)).To(Equal("rgb(207, 34, 46)"))
	// The status filter finds it (in its namespace: other tests' apps share the cluster).
	_ = eval[bool](t, ctx, `(function(){ document.getElementById("f-namespace").value = "`+f.ns+`";
		var s = document.getElementById("f-status"); s.value = "failing"; s.dispatchEvent(new Event("input")); return true; })()`)
	g.Expect(text(t, ctx, "#count")).To(HavePrefix("1 of"))
	screenshot(t, ctx, t.TempDir(), "failing-list")

	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.URL+"/apps/"+f.ns+"/web"), chromedp.WaitVisible(chromedp.CSS("#failing-banner")))
	g.Expect(text(t, ctx, "#failing-banner")).To(And(ContainSubstring(ready.Reason), ContainSubstring(ready.Message[:20])))
	g.Expect(text(t, ctx, "h1 .state")).To(ContainSubstring(ready.Reason))
	g.Expect(eval[int](t, ctx, `document.querySelectorAll('#app-summary .badge.healthy').length`)).To(Equal(0))
	screenshot(t, ctx, t.TempDir(), "failing-app")

	ro := startUI(t, env.Config, ui.Options{ReadOnly: true})
	do(t, ctx, 20*time.Second, chromedp.Navigate(ro.LoginURL("/apps/"+f.ns+"/web")), chromedp.WaitVisible(chromedp.CSS("#readonly-banner")))
	g.Expect(text(t, ctx, "#readonly-banner")).To(ContainSubstring("Read-only"))
	g.Expect(eval[int](t, ctx, `document.querySelectorAll('button[data-action]').length`)).To(Equal(0))
	screenshot(t, ctx, t.TempDir(), "read-only")
}
