package integration

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A window's selfHeal says whether drift is corrected while it holds revisions back.
// Inside a deny window (schedule now, an hour long) with the default, a kubectl edit of
// the applied revision is reverted; with selfHeal: false it is reported (status.drift,
// Ready=False/DriftDetected, status.syncWindow.selfHeal false) and stays; once the
// window has ended (the clock moved past it) the drift is corrected.
func TestSyncWindowSelfHealFalseReportsDrift(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app", func(a *gitsyncv1.Application) {
		// A resync every second: the reconcile that comes after the clock moves.
		a.Spec.Interval = &metav1.Duration{Duration: time.Second}
	})
	f.waitApplied("app", sha)

	// The default: corrected while the window is closed.
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.SyncWindows = []gitsyncv1.SyncWindow{denyNow(false)} })
	g.Eventually(func(g Gomega) *gitsyncv1.SyncWindowStatus { return f.get(g, "app").Status.SyncWindow }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(
		HaveField("State", gitsyncv1.SyncWindowClosed), HaveField("SelfHeal", BeNil())))
	cm := f.configMap(g, "a")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "edited" })
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))

	// selfHeal: false: reported, not corrected.
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		w := denyNow(false)
		w.SelfHeal = ptr.To(false)
		a.Spec.SyncWindows = []gitsyncv1.SyncWindow{w}
	})
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.ObservedGeneration).To(Equal(app.Generation))
		g.Expect(app.Status.SyncWindow).To(HaveField("SelfHeal", HaveValue(BeFalse())))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	cm = f.configMap(g, "a")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "edited" })
	msg := f.waitNotReady("app", gitsyncv1.DriftDetectedReason)
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + f.ns + "/a"))
	app := f.get(g, "app")
	g.Expect(app.Status.Drift).To(ConsistOf(And(
		HaveField("Object", "ConfigMap/"+f.ns+"/a"), HaveField("Managers", ConsistOf("kubectl-edit")))))
	g.Expect(app.Status.Sync).To(HaveField("Status", gitsyncv1.SyncStatusOutOfSync))
	g.Consistently(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("edited"))

	// The window's end lets the correction through.
	clock.Advance(t, time.Hour+time.Minute)
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Drift).To(BeEmpty())
		g.Expect(app.Status.SyncWindow).To(And(HaveField("State", gitsyncv1.SyncWindowOpen), HaveField("SelfHeal", BeNil())))
		g.Expect(app.Status.Sync).To(HaveField("Status", gitsyncv1.SyncStatusSynced))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}
