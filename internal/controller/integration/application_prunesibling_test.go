package integration

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/application"
)

// The prune on deletion fails closed while another Application of the namespace cannot
// be rendered (it might render the objects), but not silently: the deletion retries as
// a failing delete does, and at the last attempt the objects are orphaned with a Warning
// naming them and the sibling that could not be rendered, and why. Before, the ConfigMap
// stayed, the finalizer went, and only an info log line told. A sync's prune held back
// by the sibling says so with a PruneSkipped Warning (and Ready=False/PruneSkipped, the
// held object kept in the inventory).
func TestApplicationDeletionWithAnUnrenderableSiblingOrphansLoudly(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"good/cm.yaml":              configMapYAML("mine", "1"),
		"good/leaving.yaml":         configMapYAML("leaving", "1"),
		"broken/kustomization.yaml": "resources: [missing.yaml]\n",
	})
	f.app("good", func(a *gitsyncv1.Application) { a.Spec.Path = "good"; a.Spec.Prune = true })
	f.app("broken", func(a *gitsyncv1.Application) { a.Spec.Path = "broken" })
	f.waitApplied("good", sha)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "mine")).To(BeTrue())

	// A sync's prune is held back the same way, with a Warning naming the sibling.
	sha = f.repo.Commit("main", "drop leaving", nil, "good/leaving.yaml")
	app := f.waitAppliedKeeping("good", sha) // Ready=False/PruneSkipped: see TestHeldPruneIsPrunedOnceTheSiblingRenders
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "leaving")).To(BeTrue(), "fail closed: the sibling might render it")
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, f.ns, "good") {
			if e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.PruneSkippedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(SatisfyAll(
		ContainSubstring("Application broken cannot be rendered"),
		ContainSubstring("ConfigMap/"+f.ns+"/leaving not pruned"))))

	g.Expect(env.Client.Delete(t.Context(), app)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return f.exists(g, &gitsyncv1.Application{}, "good") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "mine")).To(BeTrue(), "fail closed: the sibling might render it")

	var failures []string
	g.Eventually(func(g Gomega) []string {
		var warnings []string
		failures = nil
		for _, e := range eventsFor(g, f.ns, "good") {
			switch {
			case e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.OrphanedReason:
				warnings = append(warnings, e.Note)
			case e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.PruneFailedReason:
				failures = append(failures, e.Note)
			}
		}
		return warnings
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(SatisfyAll(
		ContainSubstring(fmt.Sprintf("failed %d times", application.MaxDeletionAttempts)),
		ContainSubstring("Application broken cannot be rendered"),
		ContainSubstring("missing.yaml"),
		ContainSubstring("ConfigMap/"+f.ns+"/mine orphaned"))))
	g.Expect(failures).To(ContainElement(ContainSubstring("Application broken cannot be rendered")))
}

// An object that left Git but whose prune a sibling that cannot be rendered held back
// stays in the inventory (Ready=False/PruneSkipped naming the sibling, OutOfSync), and is
// pruned by the first sync after the sibling renders again: here a resync of the same
// revision (the sibling has its own GitRepository), then a commit to the Application's
// own repository. Before, it left the inventory at once and nothing ever pruned it.
func TestHeldPruneIsPrunedOnceTheSiblingRenders(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"cm.yaml":      configMapYAML("mine", "1"),
		"leaving.yaml": configMapYAML("leaving", "1"),
	})
	other := f.srv.CreateRepo("other")
	other.Commit("main", "broken", map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"})
	newGitRepository(t, f.ns, "other", f.srv.HTTPURL("other"), nil, "")
	f.app("good", func(a *gitsyncv1.Application) {
		a.Spec.Prune = true
		a.Spec.Interval = &metav1.Duration{Duration: time.Second} // the resync that retries the prune
	})
	f.app("broken", func(a *gitsyncv1.Application) { a.Spec.SourceRef.Name = "other" })
	f.waitApplied("good", sha)

	sha = f.repo.Commit("main", "drop leaving", nil, "leaving.yaml")
	app := f.waitAppliedKeeping("good", sha)
	leaving := gitsyncv1.InventoryEntry{ID: f.ns + "_leaving__ConfigMap", V: "v1"}
	g.Expect(app.Status.Inventory.Entries).To(ContainElement(leaving), "held back, not forgotten")
	ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(ready.Message).To(And(ContainSubstring("Application broken cannot be rendered"), ContainSubstring("ConfigMap/"+f.ns+"/leaving")))
	g.Consistently(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "leaving") }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())

	// The sibling renders again (and not the object): the next resync prunes it.
	other.Commit("main", "fixed", map[string]string{"missing.yaml": configMapYAML("theirs", "1")})
	g.Eventually(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "leaving") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	app = f.waitApplied("good", sha)
	g.Expect(app.Status.Inventory.Entries).NotTo(ContainElement(leaving))
	g.Expect(app.Status.History[0].Pruned).To(Equal(1))
}
