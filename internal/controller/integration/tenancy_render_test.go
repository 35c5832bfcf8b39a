package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/helm"
)

// Item 2 of issues 22 and 34: a chart whose template loops without calling a function (a
// list made once, ranged over 14,000² times with an empty body) fails its Application at
// the templates' step budget, inside the render: nothing is left running in the
// background, its slot is given back at once, and another Application's chart renders and
// syncs even with a single render slot. (Issue 22 stopped it at the render deadline and
// abandoned the loop; the step budget charges each range turn since.)
func TestLoopingChartDoesNotHoldARenderSlot(t *testing.T) {
	g := NewWithT(t)
	helm.SetLimits(helm.Limits{Concurrent: 1, Timeout: time.Minute, MaxAbandoned: 1})
	t.Cleanup(func() { helm.SetLimits(helm.Limits{}) })
	f, sha := newAppFixture(t, map[string]string{
		"loop/Chart.yaml":          "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
		"loop/templates/loop.yaml": "{{ $l := until 14000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}",
		"ok/Chart.yaml":            "apiVersion: v2\nname: ok\nversion: 0.1.0\n",
		"ok/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {value: \"1\"}\n",
	})
	start := time.Now()
	f.app("loop", func(a *gitsyncv1.Application) { a.Spec.Path = "loop" })
	msg := f.waitNotReady("loop", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("loop more than"))
	t.Logf("the looping Application failed after %v", time.Since(start).Round(100*time.Millisecond))
	g.Expect(helm.AbandonedRenders()).To(BeZero(), "nothing goes on in the background")

	start = time.Now()
	f.app("ok", func(a *gitsyncv1.Application) { a.Spec.Path = "ok" })
	g.Eventually(func(g Gomega) string {
		app := f.get(g, "ok")
		return app.Status.LastAppliedRevision
	}).WithTimeout(15 * time.Second).WithPolling(pollInterval).Should(ContainSubstring(sha))
	t.Logf("the other Application synced in %v", time.Since(start).Round(100*time.Millisecond))
	g.Expect(f.configMap(g, "ok").Data["value"]).To(Equal("1"))

	g.Expect(env.Client.Delete(context.Background(), f.get(g, "loop"))).To(Succeed())
	g.Eventually(func() []int { return []int{helm.RenderSlotsInUse(), helm.AbandonedRenders()} }).
		WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Equal([]int{0, 0}))
}
