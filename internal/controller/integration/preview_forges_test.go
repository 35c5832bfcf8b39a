package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/preview"
	"github.com/gitsync-dev/gitsync/internal/testutil/forgetest"
)

// GitLab's merge request and Gitea's pull request events get the same comment and
// status through their own APIs; a fork's merge request gets nothing.
func TestPreviewOnGitLabAndGitea(t *testing.T) {
	for _, kind := range []string{forgetest.GitLab, forgetest.Gitea} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			f, sha := newPreviewFixtureFor(t, kind, previewFiles("blue", "a", "old-s3cret-value"))
			f.app("kust-app", func(a *gitsyncv1.Application) { a.Spec.Path = "overlay/prod" })
			f.waitApplied("kust-app", sha)

			head := f.repo.Commit("feature", "change", previewFiles("blue", "b", "old-s3cret-value"))
			f.openPull("opened", 5, "feature", head, "acme/app")
			st := f.statusOf(head)
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.State).To(Equal("success"))
			comments := f.forge.Comments("acme/app", 5)
			g.Expect(comments).To(HaveLen(1))
			g.Expect(comments[0].Body).To(ContainSubstring("configured `ConfigMap/" + f.ns + "/web-kust`: `/data/mode`"))

			head2 := f.repo.Commit("feature", "again", previewFiles("blue", "c", "old-s3cret-value"))
			f.openPull("synchronize", 5, "feature", head2, "acme/app")
			comments = f.forge.Comments("acme/app", 5)
			g.Expect(comments).To(HaveLen(1))
			g.Expect(comments[0].Edits).To(Equal(1))
			g.Expect(comments[0].Body).To(ContainSubstring("+  mode: c"))

			fork := f.repo.Commit("fork", "fork", previewFiles("blue", "d", "x"))
			f.openPull("opened", 6, "fork", fork, "mallory/app")
			g.Expect(f.forge.Comments("acme/app", 6)).To(BeEmpty())
			g.Expect(f.statusOf(fork)).To(BeNil())
		})
	}
}

// A newer push cancels the preview still fetching the older head: only the newer head
// gets a final status, and the one comment describes it.
func TestPreviewNewerPushCancelsOlder(t *testing.T) {
	g := NewWithT(t)
	f, sha := newPreviewFixture(t, previewFiles("blue", "a", "old-s3cret-value"))
	f.app("chart-app", func(a *gitsyncv1.Application) { a.Spec.Path = "chart" })
	f.waitApplied("chart-app", sha)

	older := f.repo.Commit("feature", "one", previewFiles("green", "a", "old-s3cret-value"))
	newer := f.repo.Commit("feature", "two", previewFiles("red", "a", "old-s3cret-value"))
	f.srv.SetFetchDelay(2 * time.Second) // the older run is still fetching when the newer push comes
	f.deliver("opened", 9, "feature", older, "acme/app")
	f.deliver("synchronize", 9, "feature", newer, "acme/app")
	f.runner.Wait()
	f.srv.SetFetchDelay(0)

	for _, s := range f.forge.Statuses() {
		if s.SHA == older {
			g.Expect(s.State).To(Equal("pending"))
		}
	}
	g.Expect(f.statusOf(newer)).NotTo(BeNil())
	g.Expect(f.statusOf(newer).State).To(Equal("success"))
	comments := f.forge.Comments("acme/app", 9)
	g.Expect(comments).To(HaveLen(1))
	g.Expect(comments[0].Edits).To(Equal(0))
	g.Expect(comments[0].Body).To(ContainSubstring(newer[:12]))
	g.Expect(comments[0].Body).To(ContainSubstring("+  color: red"))

	// Two pull requests of one repository: previewed one after the other, neither
	// cancels the other.
	f.srv.SetFetchDelay(time.Second)
	f.deliver("opened", 21, "feature", newer, "acme/app")
	f.deliver("opened", 22, "feature", newer, "acme/app")
	f.runner.Wait()
	f.srv.SetFetchDelay(0)
	g.Expect(f.forge.Comments("acme/app", 21)).To(HaveLen(1))
	g.Expect(f.forge.Comments("acme/app", 22)).To(HaveLen(1))
}

// With forks: true a fork's pull request is previewed from the ref the forge keeps its
// head under in the base repository (GitHub refs/pull/N/head, GitLab
// refs/merge-requests/N/head): the fork's branch is not in the base repository.
func TestPreviewForkAllowed(t *testing.T) {
	for _, kind := range []string{forgetest.GitHub, forgetest.GitLab} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			f, sha := newPreviewFixtureFor(t, kind, previewFiles("blue", "a", "old-s3cret-value"))
			repo := &gitsyncv1.GitRepository{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "repo"}, repo)).To(Succeed())
			base := client.MergeFrom(repo.DeepCopy())
			repo.Spec.Preview.Forks = true
			g.Expect(env.Client.Patch(ctx, repo, base)).To(Succeed())
			f.app("kust-app", func(a *gitsyncv1.Application) { a.Spec.Path = "overlay/prod" })
			f.waitApplied("kust-app", sha)

			head := f.repo.Commit("fork-src", "from a fork", previewFiles("blue", "forked", "old-s3cret-value"))
			ref := preview.PullRef(kind, 11)
			for _, args := range [][]string{{"update-ref", ref, head}, {"update-ref", "-d", "refs/heads/fork-src"}} {
				out, err := exec.Command("git", append([]string{"--git-dir", f.repo.Path()}, args...)...).CombinedOutput()
				g.Expect(err).NotTo(HaveOccurred(), string(out))
			}
			f.openPull("opened", 11, "fork-src", head, "mallory/app")
			st := f.statusOf(head)
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.State).To(Equal("success"), st.Description)
			comments := f.forge.Comments("acme/app", 11)
			g.Expect(comments).To(HaveLen(1))
			g.Expect(comments[0].Body).To(ContainSubstring("Rendered at `" + ref + "@sha1:" + head + "`"))
			g.Expect(comments[0].Body).To(ContainSubstring("+  mode: forked"))
		})
	}
}

// The forge's address goes through the operator's egress guard: a denied address gets
// no request at all (not the comment, not the status).
func TestPreviewForgeBehindEgressGuard(t *testing.T) {
	g := NewWithT(t)
	f, sha := newPreviewFixture(t, previewFiles("blue", "a", "old-s3cret-value"))
	f.app("chart-app", func(a *gitsyncv1.Application) { a.Spec.Path = "chart" })
	f.waitApplied("chart-app", sha)
	deny, err := egress.ParseCIDRs("127.0.0.0/8")
	g.Expect(err).NotTo(HaveOccurred())
	f.runner.Egress = egress.New(deny)
	head := f.repo.Commit("feature", "change", previewFiles("green", "a", "old-s3cret-value"))
	f.openPull("opened", 4, "feature", head, "acme/app")
	// A Git request for another repository than this test's acme/app that reaches the
	// forge's port comes from another test's GitRepository, whose server had that port
	// before (seen in CI: "GET /app.git/info/refs" 401): not this preview's.
	var calls []forgetest.Call
	for _, c := range f.forge.Calls() {
		if !strings.Contains(c.Path, ".git/") || strings.Contains(c.Path, "acme/") {
			calls = append(calls, c)
		}
	}
	g.Expect(calls).To(BeEmpty())
}
