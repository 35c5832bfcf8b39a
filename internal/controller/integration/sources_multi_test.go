package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// withSources makes an Application of spec.sources in place of spec.sourceRef.
func withSources(sources ...gitsyncv1.ApplicationSource) func(*gitsyncv1.Application) {
	return func(a *gitsyncv1.Application) {
		a.Spec.SourceRef = gitsyncv1.SourceReference{}
		a.Spec.Path = ""
		a.Spec.Sources = sources
	}
}

func gitSource(name string) gitsyncv1.ApplicationSource {
	return gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name}}
}

// Two Git sources in one Application: the objects of both are applied into one
// inventory, and the revision lists both; a push to the second alone renders again and
// applies; an object that left one source is pruned; an object that both sources render
// fails the revision, naming both, and nothing of it is applied.
func TestSourcesJoinTwoGitRepositories(t *testing.T) {
	g := NewWithT(t)
	f, sha1 := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "one")})
	second := f.srv.CreateRepo("second")
	sha2 := second.Commit("main", "initial", map[string]string{"b.yaml": configMapYAML("b", "one"), "c.yaml": configMapYAML("c", "one")})
	newGitRepository(t, f.ns, "second", f.srv.HTTPURL("second"), nil, "")
	f.app("multi", withSources(gitSource("repo"), gitSource("second")), func(a *gitsyncv1.Application) { a.Spec.Prune = true })

	rev := func(a, b string) string {
		return "GitRepository/repo@main@sha1:" + a + ";GitRepository/second@main@sha1:" + b
	}
	app := f.waitAppliedAt("multi", rev(sha1, sha2))
	g.Expect(inventoryIDs(app)).To(ConsistOf(f.ns+"_a__ConfigMap", f.ns+"_b__ConfigMap", f.ns+"_c__ConfigMap"))
	g.Expect(app.Status.History[0].Revision).To(Equal(rev(sha1, sha2)))
	g.Expect(f.configMap(g, "c").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "multi"))

	// A push to the second source alone: applied; c left it and is pruned.
	sha2b := second.Commit("main", "b two, c gone", map[string]string{"b.yaml": configMapYAML("b", "two")}, "c.yaml")
	app = f.waitAppliedAt("multi", rev(sha1, sha2b))
	g.Expect(f.configMap(g, "b").Data["value"]).To(Equal("two"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "c")).To(BeFalse())
	g.Expect(inventoryIDs(app)).To(ConsistOf(f.ns+"_a__ConfigMap", f.ns+"_b__ConfigMap"))
	g.Expect(app.Status.History[1].Revision).To(Equal(rev(sha1, sha2)))

	// The second source renders a too: refused with both named, nothing applied.
	second.Commit("main", "a here too", map[string]string{"a.yaml": configMapYAML("a", "two"), "b.yaml": configMapYAML("b", "three")})
	msg := f.waitNotReady("multi", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(And(ContainSubstring("ConfigMap/"+f.ns+"/a"), ContainSubstring("sources[0] (GitRepository/repo)"),
		ContainSubstring("sources[1] (GitRepository/second)")))
	app = f.get(g, "multi")
	g.Expect(app.Status.LastAppliedRevision).To(Equal(rev(sha1, sha2b)))
	g.Expect(inventoryIDs(app)).To(ConsistOf(f.ns+"_a__ConfigMap", f.ns+"_b__ConfigMap"))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("one"))
	g.Expect(f.configMap(g, "b").Data["value"]).To(Equal("two"))
}

// A chart from a HelmRepository and YAML from Git, as two sources of one Application.
func TestSourcesChartAndGit(t *testing.T) {
	g := NewWithT(t)
	charts := chartserver.NewRepo(t)
	charts.Add("web", "1.0.0", webChart(t, "1.0.0"))
	f := newHelmFixture(t, charts.URL, map[string][]byte{"ca.crt": charts.CA})
	git := gittest.NewServer(t, gittest.Options{})
	extra := git.CreateRepo("extra")
	sha := extra.Commit("main", "extra", map[string]string{"extra/x.yaml": configMapYAML("x", "one")})
	newGitRepository(t, f.ns, "extra", git.HTTPURL("extra"), nil, "")
	chart := gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
		Helm: &gitsyncv1.HelmSpec{Chart: "web", Version: "1.0.0"}}
	yaml := gitSource("extra")
	yaml.Path = "./extra"
	f.app("web", withSources(chart, yaml), func(a *gitsyncv1.Application) { a.Spec.Prune = true })

	rev := "HelmRepository/charts@web@1.0.0;GitRepository/extra@main@sha1:" + sha
	app := f.waitAppliedAt("web", rev)
	g.Expect(f.configMap(g, "web-web").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "web"))
	g.Expect(f.configMap(g, "x").Data["value"]).To(Equal("one"))
	g.Expect(inventoryIDs(app)).To(ContainElements(f.ns+"_web-web__ConfigMap", f.ns+"_x__ConfigMap"))
	g.Expect(app.Status.Sync.Chart).To(Equal("web"))
}

// spec.sourceRef and spec.sources are exclusive, and one of them is required.
func TestSourcesExclusiveWithSourceRef(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ref := gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}
	cases := map[string]struct {
		spec gitsyncv1.ApplicationSpec
		msg  string
	}{
		"both":    {gitsyncv1.ApplicationSpec{SourceRef: ref, Sources: []gitsyncv1.ApplicationSource{{SourceRef: ref}}}, "exactly one of spec.sourceRef and spec.sources is required"},
		"neither": {gitsyncv1.ApplicationSpec{}, "exactly one of spec.sourceRef and spec.sources is required"},
		"helm on the spec": {gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{{SourceRef: ref}}, Helm: &gitsyncv1.HelmSpec{ReleaseName: "x"}},
			"with spec.sources, path, helm and postBuild go on each source"},
		"pinned": {gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{{SourceRef: ref}}, PinnedRevision: "sha1:" + strings.Repeat("a", 40)},
			"rollback of a multi-source Application is not supported"},
		"chart per source": {gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}}}},
			"helm.chart is required with a HelmRepository source"},
	}
	for name, c := range cases {
		app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{GenerateName: "cel-", Namespace: ns}, Spec: c.spec}
		g.Expect(env.Client.Create(context.Background(), app)).To(MatchError(ContainSubstring(c.msg)), name)
	}
	ok := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{{SourceRef: ref}, {SourceRef: ref, Path: "./b"}}}}
	g.Expect(env.Client.Create(context.Background(), ok)).To(Succeed())
}

// After a restart (no desired state in memory), drift protection comes back from every
// source at its last applied revision, though the newest revision of one fails to build.
func TestSourcesDriftProtectionIsRestored(t *testing.T) {
	g := NewWithT(t)
	f, sha1 := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "1")})
	second := f.srv.CreateRepo("second")
	sha2 := second.Commit("main", "initial", map[string]string{"b.yaml": configMapYAML("b", "1")})
	newGitRepository(t, f.ns, "second", f.srv.HTTPURL("second"), nil, "")
	f.app("multi", withSources(gitSource("repo"), gitSource("second")))
	applied := "GitRepository/repo@main@sha1:" + sha1 + ";GitRepository/second@main@sha1:" + sha2
	f.waitAppliedAt("multi", applied)
	key := types.NamespacedName{Namespace: f.ns, Name: "multi"}

	driftReconciler.Desired.Forget(context.Background(), key) // what a restart loses
	second.Commit("main", "broken", map[string]string{"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n"})
	g.Expect(f.waitNotReady("multi", gitsyncv1.BuildFailedReason)).To(ContainSubstring("sources[1] (GitRepository/second)"))
	g.Eventually(func() bool { return driftReconciler.Desired.Tracked(key) }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

	for _, name := range []string{"a", "b"} {
		f.setValue(g, name, "edited")
		g.Eventually(func(g Gomega) string { return f.configMap(g, name).Data["value"] }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))
	}
	g.Expect(f.get(g, "multi").Status.LastAppliedRevision).To(Equal(applied))
}
