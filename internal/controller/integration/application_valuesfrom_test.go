package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A chart from a chart repository with its values file in a second Git repository
// (helm.valuesFilesFrom): the values apply; a push to the values repository alone
// renders the chart again; status and history record both revisions.
func TestValuesFilesFromAnotherSource(t *testing.T) {
	g := NewWithT(t)
	charts := chartserver.NewRepo(t)
	charts.Add("web", "1.0.0", webChart(t, "1.0.0"))
	f := newHelmFixture(t, charts.URL, map[string][]byte{"ca.crt": charts.CA})
	git := gittest.NewServer(t, gittest.Options{})
	values := git.CreateRepo("values")
	sha := values.Commit("main", "prod values", map[string]string{"prod/web.yaml": "color: red\n"})
	newGitRepository(t, f.ns, "values", git.HTTPURL("values"), nil, "")
	f.chartApp("web", "web", "1.0.0", func(a *gitsyncv1.Application) {
		a.Spec.Helm.ValuesFiles = []string{"values-prod.yaml"} // from the chart: size large
		a.Spec.Helm.ValuesFilesFrom = []gitsyncv1.ValuesFileReference{{
			SourceRef: gitsyncv1.ValuesSourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "values"}, Path: "prod/web.yaml"}}
	})

	app := f.waitAppliedAt("web", "web@1.0.0")
	g.Expect(f.configMap(g, "web-web").Data).To(And(HaveKeyWithValue("color", "red"), HaveKeyWithValue("size", "large")))
	valuesRev := "GitRepository/values@main@sha1:" + sha
	g.Expect(app.Status.ValuesRevisions).To(Equal([]string{valuesRev}))
	g.Expect(app.Status.History[0].Revision).To(Equal("web@1.0.0"))
	g.Expect(app.Status.History[0].ValuesRevisions).To(Equal([]string{valuesRev}))

	// A push to the values repository alone changes the object.
	sha2 := values.Commit("main", "greener", map[string]string{"prod/web.yaml": "color: green\n"})
	g.Eventually(func(g Gomega) string { return f.configMap(g, "web-web").Data["color"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("green"))
	valuesRev2 := "GitRepository/values@main@sha1:" + sha2
	g.Eventually(func(g Gomega) []string { return f.get(g, "web").Status.ValuesRevisions }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{valuesRev2}))
	app = f.waitAppliedAt("web", "web@1.0.0")
	g.Expect(app.Status.History[0].Revision).To(Equal("web@1.0.0"))
	g.Expect(app.Status.History[0].ValuesRevisions).To(Equal([]string{valuesRev2}))
	g.Expect(app.Status.History[1].ValuesRevisions).To(Equal([]string{valuesRev}))

	// A file that is not in the values source: nothing of it applies.
	f.edit(g, "web", func(a *gitsyncv1.Application) { a.Spec.Helm.ValuesFilesFrom[0].Path = "prod/missing.yaml" })
	g.Expect(f.waitNotReady("web", gitsyncv1.ValuesNotFoundReason)).To(ContainSubstring("GitRepository/values"))
	g.Expect(f.configMap(g, "web-web").Data["color"]).To(Equal("green"))
}

// With autoSync off, a new commit of the values source waits for a sync request.
func TestValuesFilesFromWaitsWithoutAutoSync(t *testing.T) {
	g := NewWithT(t)
	charts := chartserver.NewRepo(t)
	charts.Add("web", "1.0.0", webChart(t, "1.0.0"))
	f := newHelmFixture(t, charts.URL, map[string][]byte{"ca.crt": charts.CA})
	git := gittest.NewServer(t, gittest.Options{})
	values := git.CreateRepo("values")
	values.Commit("main", "prod values", map[string]string{"web.yaml": "color: red\n"})
	newGitRepository(t, f.ns, "values", git.HTTPURL("values"), nil, "")
	f.chartApp("web", "web", "1.0.0", func(a *gitsyncv1.Application) {
		a.Spec.AutoSync = ptr.To(false)
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "1"}
		a.Spec.Helm.ValuesFilesFrom = []gitsyncv1.ValuesFileReference{{
			SourceRef: gitsyncv1.ValuesSourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "values"}, Path: "web.yaml"}}
	})
	f.waitAppliedAt("web", "web@1.0.0")
	g.Expect(f.configMap(g, "web-web").Data["color"]).To(Equal("red"))

	sha2 := values.Commit("main", "greener", map[string]string{"web.yaml": "color: green\n"})
	g.Eventually(func(g Gomega) string { return f.get(g, "web").Status.Sync.Status }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(gitsyncv1.SyncStatusOutOfSync))
	g.Expect(f.configMap(g, "web-web").Data["color"]).To(Equal("red"))

	f.edit(g, "web", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "2"}
	})
	g.Eventually(func(g Gomega) string { return f.configMap(g, "web-web").Data["color"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("green"))
	g.Eventually(func(g Gomega) []string { return f.get(g, "web").Status.ValuesRevisions }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"GitRepository/values@main@sha1:" + sha2}))
}
