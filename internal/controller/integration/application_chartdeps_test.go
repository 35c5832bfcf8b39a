package integration

import (
	"testing"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A chart in Git whose Chart.lock names a dependency it does not vendor: the dependency
// comes from the namespace's HelmRepository with that URL, at the locked version; a
// dependency on a URL that no HelmRepository names is never fetched.
func TestApplicationChartDependenciesFromHelmRepository(t *testing.T) {
	g := NewWithT(t)
	srv := chartserver.NewRepo(t)
	srv.Add("web", "1.0.0", webChart(t, "1.0.0"))
	srv.Add("web", "1.2.0", webChart(t, "1.2.0"))
	stranger := chartserver.NewRepo(t) // no HelmRepository names it
	stranger.Add("web", "1.0.0", webChart(t, "1.0.0"))

	hf := newHelmFixture(t, srv.URL+"/", map[string][]byte{"ca.crt": srv.CA})
	f := hf.appFixture
	f.srv = gittest.NewServer(t, gittest.Options{})
	f.repo = f.srv.CreateRepo("app")
	files := map[string]string{
		"umbrella/Chart.yaml": "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n" +
			"  - name: web\n    version: \">=1.0.0\"\n    repository: " + srv.URL + "\n",
		"umbrella/Chart.lock":          "dependencies:\n  - name: web\n    version: 1.0.0\n    repository: " + srv.URL + "\ndigest: sha256:0\ngenerated: \"2026-01-01T00:00:00Z\"\n",
		"umbrella/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\ndata:\n  a: b\n",
		"umbrella/values.yaml":         "web:\n  color: red\n",
		"stranger/Chart.yaml":          "apiVersion: v2\nname: stranger\nversion: 0.1.0\ndependencies:\n  - name: web\n    version: 1.0.0\n    repository: " + stranger.URL + "\n",
		"stranger/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stranger\n",
		"stranger/templates/NOTES.txt": "hi\n",
	}
	sha := f.repo.Commit("main", "charts", files)
	newGitRepository(t, f.ns, "repo", f.srv.HTTPURL("app"), nil, "")
	f.app("umbrella", func(a *gitsyncv1.Application) { a.Spec.Path = "umbrella" })
	f.waitApplied("umbrella", sha)
	g.Expect(f.configMap(g, "umbrella").Data).To(HaveKeyWithValue("a", "b"))
	cm := f.configMap(g, "umbrella-web")
	g.Expect(cm.Data).To(HaveKeyWithValue("chart", "1.0.0"), "the locked version, not the newest")
	g.Expect(cm.Data).To(HaveKeyWithValue("color", "red"), "the parent's values reach the dependency")

	f.app("stranger", func(a *gitsyncv1.Application) { a.Spec.Path = "stranger" })
	msg := f.waitNotReady("stranger", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("dependencies web are not vendored in charts/"))
	g.Expect(stranger.IndexRequests.Load() + stranger.ChartDownloads.Load()).To(BeZero())
}
