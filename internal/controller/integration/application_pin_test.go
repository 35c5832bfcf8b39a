package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// spec.pinnedRevision applies that revision even when its checkout left storage (it is
// fetched again), newer commits are not applied, drift is corrected back to the pinned
// revision, and clearing the pin applies the newest commit.
func TestApplicationPinnedRevision(t *testing.T) {
	g := NewWithT(t)
	f, sha1 := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app")
	f.waitApplied("app", sha1)
	sha2 := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("a", "2")})
	editRepo(g, f.ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "2"}
	})
	f.waitApplied("app", sha2)

	// The first commit's checkout is gone (GC, or a restart with a new storage path).
	checkout := filepath.Join(storagePath, "checkouts", source.DirName(sourceid.RepositoryKey(getRepo(g, f.ns, "repo")), sha1, nil))
	g.Expect(checkout).To(BeADirectory())
	g.Expect(os.RemoveAll(checkout)).To(Succeed())
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.PinnedRevision = "main@sha1:" + sha1 })
	f.waitApplied("app", sha1)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))
	g.Expect(checkout).To(BeADirectory())

	// A newer commit is fetched by the source, not applied.
	sha3 := f.repo.Commit("main", "three", map[string]string{"cm.yaml": configMapYAML("a", "3")})
	editRepo(g, f.ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "3"}
	})
	g.Eventually(func(g Gomega) string { return getRepo(g, f.ns, "repo").Status.Artifact.Revision }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("main@sha1:" + sha3))
	g.Consistently(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("1"))

	// Drift is corrected back to the pinned revision.
	cm := f.configMap(g, "a")
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(context.Background(), cm)).To(Succeed())
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.PinnedRevision = "" })
	f.waitApplied("app", sha3)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("3"))
}
