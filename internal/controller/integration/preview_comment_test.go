package integration

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/preview"
)

// previewFiles: a chart in Git (chart/) and a kustomize overlay (overlay/prod over
// overlay/base, with a Secret).
func previewFiles(color, mode, password string) map[string]string {
	return map[string]string{
		"chart/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":               "color: " + color + "\n",
		"chart/templates/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-chart\ndata:\n  color: {{ .Values.color | quote }}\n",
		"overlay/base/kustomization.yaml": "resources: [cm.yaml, secret.yaml]\n",
		"overlay/base/cm.yaml":            configMapYAML("web-kust", "base"),
		"overlay/base/secret.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-creds\nstringData:\n  password: " + password + "\n",
		"overlay/prod/kustomization.yaml": "resources: [../base]\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: web-kust\n    data:\n      mode: " + mode + "\n",
	}
}

// A pull request changing a chart value, a kustomize overlay and a Secret's value gets
// one comment naming both Applications and the changed fields, the Secret's values
// masked, and status success; a second push updates the same comment; a fork's pull
// request (forks: false) gets nothing; no object in the cluster changed.
func TestPreviewCommentsOnPullRequest(t *testing.T) {
	g := NewWithT(t)
	f, sha := newPreviewFixture(t, previewFiles("blue", "a", "old-s3cret-value"))
	f.app("chart-app", func(a *gitsyncv1.Application) { a.Spec.Path = "chart" })
	f.app("kust-app", func(a *gitsyncv1.Application) { a.Spec.Path = "overlay/prod" })
	f.waitApplied("chart-app", sha)
	f.waitApplied("kust-app", sha)
	before := f.versions(g)

	head := f.repo.Commit("feature", "change", previewFiles("green", "b", "new-s3cret-value"))
	f.openPull("opened", 7, "feature", head, "acme/app")

	st := f.statusOf(head)
	g.Expect(st).NotTo(BeNil())
	g.Expect(st.State).To(Equal("success"), st.Description)
	g.Expect(st.Description).To(Equal("2 of 2 Applications would change"))
	comments := f.forge.Comments("acme/app", 7)
	g.Expect(comments).To(HaveLen(1))
	body := comments[0].Body
	t.Logf("comment:\n%s", body)
	g.Expect(body).To(HavePrefix(preview.Marker))
	g.Expect(body).To(ContainSubstring("| " + f.ns + "/chart-app | 0 | 1 | 0 | 0 | changes |"))
	g.Expect(body).To(ContainSubstring("| " + f.ns + "/kust-app | 0 | 2 | 0 | 0 | changes |"))
	g.Expect(body).To(ContainSubstring("configured `ConfigMap/" + f.ns + "/web-chart`: `/data/color`"))
	g.Expect(body).To(ContainSubstring("configured `ConfigMap/" + f.ns + "/web-kust`: `/data/mode`"))
	g.Expect(body).To(ContainSubstring("configured `Secret/" + f.ns + "/web-creds`"))
	g.Expect(body).To(ContainSubstring("+  color: green"))
	g.Expect(body).NotTo(ContainSubstring("s3cret"))

	// A second push: the same comment, updated.
	head2 := f.repo.Commit("feature", "again", previewFiles("red", "b", "new-s3cret-value"))
	f.openPull("synchronize", 7, "feature", head2, "acme/app")
	g.Expect(f.statusOf(head2)).NotTo(BeNil())
	g.Expect(f.statusOf(head2).State).To(Equal("success"))
	comments = f.forge.Comments("acme/app", 7)
	g.Expect(comments).To(HaveLen(1))
	g.Expect(comments[0].Edits).To(Equal(1))
	g.Expect(comments[0].Body).To(ContainSubstring(head2[:12]))
	g.Expect(comments[0].Body).To(ContainSubstring("+  color: red"))

	// A fork's pull request: no fetch, no comment, no status.
	fetches := f.srv.Counts("acme/app")
	fork := f.repo.Commit("fork-branch", "from a fork", previewFiles("black", "c", "x"))
	f.openPull("opened", 8, "fork-branch", fork, "mallory/app")
	g.Expect(f.forge.Comments("acme/app", 8)).To(BeEmpty())
	g.Expect(f.statusOf(fork)).To(BeNil())
	g.Expect(f.srv.Counts("acme/app")).To(Equal(fetches))

	// Closing: nothing is previewed, and nothing in the cluster changed at any point.
	f.openPull("closed", 7, "feature", head2, "acme/app")
	g.Expect(f.forge.Comments("acme/app", 7)[0].Edits).To(Equal(1))
	g.Expect(f.versions(g)).To(Equal(before))
	g.Expect(strings.Count(comments[0].Body, preview.Marker)).To(Equal(1))
}
