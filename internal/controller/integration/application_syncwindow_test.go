package integration

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// clock is the Application reconciler's clock: the real time plus an offset that a test
// moves forward (and back at its end) to see a sync window end without waiting for it.
var clock testClock

type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d until the test ends.
func (c *testClock) Advance(t *testing.T, d time.Duration) {
	c.offset.Add(int64(d))
	t.Cleanup(func() { c.offset.Add(-int64(d)) })
}

// denyNow is a deny window that opened at the start of this minute, for an hour.
func denyNow(manualSync bool) gitsyncv1.SyncWindow {
	now := clock.Now().UTC()
	return gitsyncv1.SyncWindow{Kind: gitsyncv1.SyncWindowDeny, Schedule: fmt.Sprintf("%d %d * * *", now.Minute(), now.Hour()),
		Duration: metav1.Duration{Duration: time.Hour}, ManualSync: manualSync}
}

// A deny window (schedule now, an hour long) holds a new revision back and says so in
// status and an event, while drift of the applied revision is still corrected; a sync
// request is refused while no window has manualSync, and goes through with it; the
// window's end (the clock moved past it) lets the held revision apply.
func TestSyncWindowHoldsNewRevisions(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app", func(a *gitsyncv1.Application) {
		// A resync every second: the reconcile that comes after the clock moves.
		a.Spec.Interval = &metav1.Duration{Duration: time.Second}
	})
	f.waitApplied("app", sha)

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.SyncWindows = []gitsyncv1.SyncWindow{denyNow(false)} })
	sha2 := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("a", "2")})
	msg := f.waitNotReady("app", gitsyncv1.SyncWindowClosedReason)
	g.Expect(msg).To(And(ContainSubstring("main@sha1:"+sha2), ContainSubstring("deny")))
	app := f.get(g, "app")
	g.Expect(app.Status.Sync).To(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha2}))
	g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	window := app.Status.SyncWindow
	g.Expect(window).NotTo(BeNil())
	g.Expect(window.State).To(Equal(gitsyncv1.SyncWindowClosed))
	g.Expect(window.HeldRevision).To(Equal("main@sha1:" + sha2))
	g.Expect(window.ManualSync).To(BeFalse())
	g.Expect(window.Until).NotTo(BeNil())
	g.Expect(window.Until.Time).To(BeTemporally("~", clock.Now().Truncate(time.Minute).Add(time.Hour), time.Minute))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))
	g.Eventually(func(g Gomega) []string { return f.windowEvents(g) }).WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(ContainElement(HavePrefix("Normal: revision main@sha1:" + sha2 + " waits until")))

	// Drift of the applied revision is still corrected.
	cm := f.configMap(g, "a")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "edited" })
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))

	// A sync request is refused: no window has manualSync.
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "refused"}
	})
	g.Eventually(func(g Gomega) string { return f.get(g, "app").Status.LastHandledReconcileAt }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("refused"))
	g.Eventually(func(g Gomega) []string { return f.windowEvents(g) }).WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(ContainElement(HavePrefix("Warning: sync requested at refused refused: deny")))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))
	g.Expect(f.get(g, "app").Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))

	// With manualSync, the request goes through; the window stays closed.
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Spec.SyncWindows = []gitsyncv1.SyncWindow{denyNow(true)}
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "manual"}
	})
	app = f.waitApplied("app", sha2)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("2"))
	g.Expect(app.Status.SyncWindow.State).To(Equal(gitsyncv1.SyncWindowClosed))
	g.Expect(app.Status.SyncWindow.ManualSync).To(BeTrue())

	// The next revision waits for the window's end, and is applied once the clock passes it.
	sha3 := f.repo.Commit("main", "three", map[string]string{"cm.yaml": configMapYAML("a", "3")})
	g.Eventually(func(g Gomega) *gitsyncv1.SyncWindowStatus { return f.get(g, "app").Status.SyncWindow }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HaveField("HeldRevision", "main@sha1:"+sha3))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("2"))
	clock.Advance(t, time.Hour+time.Minute)
	app = f.waitApplied("app", sha3)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("3"))
	g.Expect(app.Status.SyncWindow.State).To(Equal(gitsyncv1.SyncWindowOpen))
	g.Expect(app.Status.History[0].Revision).To(Equal("main@sha1:" + sha3))
}

// A window that does not parse holds the Application: Stalled, SyncWindowInvalid, naming
// the entry.
func TestSyncWindowInvalid(t *testing.T) {
	g := NewWithT(t)
	f, _ := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.SyncWindows = []gitsyncv1.SyncWindow{{Kind: gitsyncv1.SyncWindowDeny, Schedule: "0 25 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	})
	msg := f.waitNotReady("app", gitsyncv1.SyncWindowInvalidReason)
	g.Expect(msg).To(ContainSubstring(`spec.syncWindows[0]: schedule "0 25 * * *"`))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "a")).To(BeFalse())
}

// windowEvents returns "Type: note" of the Application's SyncWindowClosed events.
func (f *appFixture) windowEvents(g Gomega) []string {
	var out []string
	for _, e := range eventsFor(g, f.ns, "app") {
		if e.Reason == gitsyncv1.SyncWindowClosedReason {
			out = append(out, e.Type+": "+strings.TrimSpace(e.Note))
		}
	}
	return out
}

// An Alert routes the event of a window holding a revision back: here the first
// revision of an Application created inside a deny window.
func TestSyncWindowNotifies(t *testing.T) {
	f := newNotifyFixture(t)
	f.provider("p", "generic", "/hook", nil)
	f.alert("a", "p")
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.SyncWindows = []gitsyncv1.SyncWindow{denyNow(false)} })
	sha := f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
	f.waitRequest("/hook", `"reason":"SyncWindowClosed"`, "main@sha1:"+sha, "waits until")
	g := NewWithT(t)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "cm")).To(BeFalse())
	g.Expect(f.get(g, "app").Status.SyncWindow).To(HaveField("HeldRevision", "main@sha1:"+sha))
}
