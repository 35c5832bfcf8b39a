package integration

import (
	"testing"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A pull request to one source of an Application of spec.sources: the preview renders
// the head of that source with the other at its current artifact, and names the source
// that moves.
func TestPreviewOfOneOfSeveralSources(t *testing.T) {
	g := NewWithT(t)
	f, sha := newPreviewFixture(t, previewFiles("blue", "a", "s3cret-value"))
	other := f.srv.CreateRepo("acme/other")
	otherSHA := other.Commit("main", "other", map[string]string{"cm.yaml": configMapYAML("other", "1")})
	newGitRepository(t, f.ns, "other", f.srv.HTTPURL("acme/other"), nil, "")
	f.app("multi", withSources(
		gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}, Path: "overlay/prod"},
		gitSource("other")))
	applied := "GitRepository/repo@main@sha1:" + sha + ";GitRepository/other@main@sha1:" + otherSHA
	(&appFixture{t: t, ns: f.ns}).waitAppliedAt("multi", applied)

	head := f.repo.Commit("feature", "mode b", previewFiles("blue", "b", "s3cret-value"))
	f.openPull("opened", 3, "feature", head, "acme/app")
	st := f.statusOf(head)
	g.Expect(st).NotTo(BeNil())
	g.Expect(st.State).To(Equal("success"), st.Description)
	comments := f.forge.Comments("acme/app", 3)
	g.Expect(comments).To(HaveLen(1))
	body := comments[0].Body
	g.Expect(body).To(ContainSubstring("| " + f.ns + "/multi | 0 | 1 | 0 | 2 | changes |"))
	g.Expect(body).To(ContainSubstring("- source `GitRepository/repo`: `main@sha1:" + sha[:7] + "` → `feature@sha1:" + head[:7] + "`"))
	g.Expect(body).NotTo(ContainSubstring("source `GitRepository/other`"))
	g.Expect(body).To(ContainSubstring("configured `ConfigMap/" + f.ns + "/web-kust`: `/data/mode`"))
	g.Expect(body).NotTo(ContainSubstring("s3cret"))
}
