package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/helm"
)

// Item 2 of issue 22: a chart whose template loops without calling a function (a list
// made once, ranged over 14,000² times with an empty body — 6,000² under the race
// detector: seconds of CPU either way) fails its
// Application at the render deadline; the render goes on in the background but gives
// its slot back, so another Application's chart renders and syncs at once, even with a
// single render slot; a retry does not start it again; and once it ends the
// slot and abandoned counts return to zero. Before, the other Application waited for
// the loop to end.
func TestLoopingChartDoesNotHoldARenderSlot(t *testing.T) {
	g := NewWithT(t)
	loopSize := "14000"
	if raceDetector {
		loopSize = "6000"
	}
	helm.SetLimits(helm.Limits{Concurrent: 1, Timeout: time.Second, MaxAbandoned: 1})
	t.Cleanup(func() { helm.SetLimits(helm.Limits{}) })
	f, sha := newAppFixture(t, map[string]string{
		"loop/Chart.yaml":          "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
		"loop/templates/loop.yaml": "{{ $l := until " + loopSize + " }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}",
		"ok/Chart.yaml":            "apiVersion: v2\nname: ok\nversion: 0.1.0\n",
		"ok/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {value: \"1\"}\n",
	})
	start := time.Now()
	f.app("loop", func(a *gitsyncv1.Application) { a.Spec.Path = "loop" })
	msg := f.waitNotReady("loop", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("the render took longer than 1s"))
	t.Logf("the looping Application failed after %v", time.Since(start).Round(100*time.Millisecond))
	g.Expect(helm.AbandonedRenders()).To(Equal(1))

	start = time.Now()
	f.app("ok", func(a *gitsyncv1.Application) { a.Spec.Path = "ok" })
	g.Eventually(func(g Gomega) string {
		app := f.get(g, "ok")
		return app.Status.LastAppliedRevision
	}).WithTimeout(15 * time.Second).WithPolling(pollInterval).Should(ContainSubstring(sha))
	t.Logf("the other Application synced in %v", time.Since(start).Round(100*time.Millisecond))
	g.Expect(f.configMap(g, "ok").Data["value"]).To(Equal("1"))

	// A retry of the looping Application (a sync request) is refused at once: no second loop.
	f.edit(g, "loop", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: time.Now().Format(time.RFC3339Nano)}
	})
	g.Eventually(func(g Gomega) string {
		return f.waitNotReady("loop", gitsyncv1.BuildFailedReason)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("still running after its deadline"))
	g.Expect(helm.AbandonedRenders()).To(Equal(1))

	g.Expect(env.Client.Delete(context.Background(), f.get(g, "loop"))).To(Succeed())
	g.Eventually(func() []int { return []int{helm.RenderSlotsInUse(), helm.AbandonedRenders()} }).
		WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Equal([]int{0, 0}))
}
