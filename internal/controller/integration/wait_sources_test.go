package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// `gitsync wait` of an Application of two Git sources: --revision takes the commit of
// either source; without it, the wait judges every source's newest revision, so a new
// commit of the second source that waits for a sync request (autoSync off) is what it
// waits for, and the sync of it ends the wait.
func TestWaitOfSeveralSources(t *testing.T) {
	g := NewWithT(t)
	f, sha1 := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "one")})
	second := f.srv.CreateRepo("second")
	sha2 := second.Commit("main", "initial", map[string]string{"b.yaml": configMapYAML("b", "one")})
	newGitRepository(t, f.ns, "second", f.srv.HTTPURL("second"), nil, "")
	f.app("multi", withSources(gitSource("repo"), gitSource("second")))
	rev := func(a, b string) string {
		return "GitRepository/repo@main@sha1:" + a + ";GitRepository/second@main@sha1:" + b
	}
	f.waitAppliedAt("multi", rev(sha1, sha2))

	for _, commit := range []string{sha1[:12], sha2[:12]} {
		res := gitsyncCLI(t, "wait", "app", "multi", "-n", f.ns, "--for", "synced", "--revision", commit, "--timeout", "30s")
		g.Expect(res.code).To(Equal(0), res.out)
		g.Expect(res.out).To(ContainSubstring("is synced (revision " + rev(sha1, sha2) + ")"))
	}

	// autoSync off, then a new commit of the second source, fetched: it waits.
	f.edit(g, "multi", func(a *gitsyncv1.Application) { a.Spec.AutoSync = ptr.To(false) })
	g.Eventually(func(g Gomega) int64 {
		a := f.get(g, "multi")
		return a.Generation - a.Status.ObservedGeneration
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeZero())
	sha2b := second.Commit("main", "b two", map[string]string{"b.yaml": configMapYAML("b", "two")})
	g.Eventually(func(g Gomega) string {
		a := getRepo(g, f.ns, "second").Status.Artifact
		g.Expect(a).NotTo(BeNil())
		return a.Revision
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("main@sha1:" + sha2b))
	res := gitsyncCLI(t, "wait", "app", "multi", "-n", f.ns, "--for", "synced", "--timeout", "2s")
	g.Expect(res.code).NotTo(Equal(0), res.out)
	g.Expect(res.out).To(ContainSubstring("to be synced at " + rev(sha1, sha2b) + ";"))

	g.Expect(gitsyncCLI(t, "reconcile", "app", "multi", "-n", f.ns).code).To(Equal(0))
	res = gitsyncCLI(t, "wait", "app", "multi", "-n", f.ns, "--for", "synced", "--timeout", "60s")
	g.Expect(res.code).To(Equal(0), res.out)
	g.Expect(res.out).To(ContainSubstring("is synced (revision " + rev(sha1, sha2b) + ")"))
}
