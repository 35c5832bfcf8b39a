package integration

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Hooks run when people expect: once per new revision (a rollback's pin is one), never
// for a plain sync request, a suspend and resume, or a spec change at the same revision,
// and again for a request that asks for them (gitsync reconcile app NAME --hooks).
func TestHookRunsPerRevisionAndOnRequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	files := map[string]string{
		"migrate.yaml": jobYAML("name", "migrate", `gitsync.dev/hook: PreSync`),
		"cm.yaml":      configMapYAML("a", "1"),
	}
	f, sha1 := newAppFixtureIn(t, ns, files)
	audit := auditHooks(t, ns, "app")
	f.app("app")
	runs := func() int {
		n := 0
		for _, w := range whatOf(audit.snapshot()) {
			if strings.HasPrefix(w, "created Job/migrate") {
				n++
			}
		}
		return n
	}
	settle := func(want int, why string) {
		t.Helper()
		g.Eventually(runs).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(want), why)
		g.Consistently(runs, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(want), why)
	}
	request := func(value string, hooks bool) {
		t.Helper()
		f.edit(g, "app", func(a *gitsyncv1.Application) {
			a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
			if hooks {
				a.Annotations[gitsyncv1.RunHooksAnnotation] = value
			}
		})
		g.Eventually(func(g Gomega) string { return f.get(g, "app").Status.LastHandledReconcileAt }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(value))
	}

	f.waitApplied("app", sha1)
	settle(1, "the first revision")
	request("plain", false)
	settle(1, "a plain request")
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Suspend = true })
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Suspend = false })
	request("resume", false)
	settle(1, "suspend and resume")
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	settle(1, "a spec change")
	request("hooks", true)
	settle(2, "a request that asks for the hooks")

	files["cm.yaml"] = configMapYAML("a", "2")
	sha2 := f.repo.Commit("main", "two", files)
	f.waitApplied("app", sha2)
	settle(3, "a new revision")
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.PinnedRevision = "main@sha1:" + sha1 })
	f.waitApplied("app", sha1)
	request("after-rollback", false) // what `gitsync rollback` does after the pin
	settle(4, "a rollback is one run")
}
