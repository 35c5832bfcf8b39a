package integration

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/application"
)

// The prune on deletion fails closed while another Application of the namespace cannot
// be rendered (it might render the objects), but not silently: the deletion retries as
// a failing delete does, and at the last attempt the objects are orphaned with a Warning
// naming them and the sibling that could not be rendered, and why. Before, the ConfigMap
// stayed, the finalizer went, and only an info log line told. A sync's prune held back
// by the sibling says so with a PruneSkipped Warning.
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
	app := f.waitApplied("good", sha)
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
