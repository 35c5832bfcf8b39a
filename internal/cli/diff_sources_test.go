package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

func cmYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// An Application of two sources: `get apps -o wide` names both, and `diff app` names the
// source whose new revision it renders (and not the one that did not move).
func TestDiffNamesTheSourceThatChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	sha, repos := map[string]string{}, map[string]*gittest.Repo{}
	for _, name := range []string{"one", "two"} {
		repos[name] = srv.CreateRepo(name)
		sha[name] = repos[name].Commit("main", "first", map[string]string{name + ".yaml": cmYAML(name, "1")})
		g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL(name), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
		})).To(Succeed())
	}
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "multi", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{AutoSync: ptr.To(false), Sources: []gitsyncv1.ApplicationSource{
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "one"}},
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "two"}},
		}}}
	app.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "1"} // the first sync
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	applied := "GitRepository/one@main@sha1:" + sha["one"] + ";GitRepository/two@main@sha1:" + sha["two"]
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(app.Status.LastAppliedRevision).To(Equal(applied))
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	r := gitsync(t, "get", "apps", "-n", ns, "-o", "wide")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(And(ContainSubstring("GitRepository/one,GitRepository/two"), ContainSubstring("./,./"),
		ContainSubstring("one@main@sha1:"+sha["one"][:7]+",two@main@sha1:"+sha["two"][:7])))

	// A new commit of the second source only, which waits (autoSync off).
	sha2 := repos["two"].Commit("main", "second", map[string]string{"two.yaml": cmYAML("two", "2")})
	r = gitsync(t, "reconcile", "source", "two", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	r = gitsync(t, "diff", "app", "multi", "-n", ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring(fmt.Sprintf("source GitRepository/two: main@sha1:%s → main@sha1:%s\n", sha["two"][:7], sha2[:7])))
	g.Expect(r.out).NotTo(ContainSubstring("source GitRepository/one"))
	g.Expect(r.out).To(ContainSubstring("configured ConfigMap/" + ns + "/two"))
	g.Expect(r.out).To(ContainSubstring("0 created, 1 configured, 0 pruned, 1 unchanged"))

	// A branch of the first source: `diff source` renders it with the second at its
	// current artifact, and names the source that moved.
	feature := repos["one"].Commit("feature", "one at 9", map[string]string{"one.yaml": cmYAML("one", "9")})
	r = gitsync(t, "diff", "source", "one", "-n", ns, "--revision", "feature")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(MatchRegexp(ns + `/multi\s+0\s+2\s+0\s+0\s+changes`))
	g.Expect(r.out).To(ContainSubstring(fmt.Sprintf("source GitRepository/one: main@sha1:%s → feature@sha1:%s\n", sha["one"][:7], feature[:7])))
	g.Expect(r.out).To(ContainSubstring(fmt.Sprintf("source GitRepository/two: main@sha1:%s → main@sha1:%s\n", sha["two"][:7], sha2[:7])))

	// --path renders one source: refused for several.
	r = gitsync(t, "diff", "app", "multi", "-n", ns, "--path", t.TempDir())
	g.Expect(r.code).To(Equal(2), r.String())
	g.Expect(r.err).To(ContainSubstring("has spec.sources"))
}

// `diff source --revision` of a Git repository that an Application joins with a chart
// from a HelmRepository renders the chart at the version it is at now beside the branch,
// instead of failing the Application.
func TestDiffSourceRendersAChartSourceBeside(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	charts := chartserver.NewRepo(t)
	charts.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
		Data: map[string][]byte{"ca.crt": charts.CA}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: charts.URL, Interval: &metav1.Duration{Duration: time.Hour},
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "ca"}},
	})).To(Succeed())
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("notes")
	repo.Commit("main", "first", map[string]string{"notes.yaml": cmYAML("notes", "1")})
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "notes", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("notes"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}, Helm: &gitsyncv1.HelmSpec{Chart: "web"}},
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "notes"}},
		}}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	repo.Commit("feature", "notes at 2", map[string]string{"notes.yaml": cmYAML("notes", "2")})
	r := gitsync(t, "diff", "source", "notes", "-n", ns, "--revision", "feature")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(MatchRegexp(ns + `/mixed\s+0\s+1\s+0\s+1\s+changes`))
	g.Expect(r.out).To(ContainSubstring("configured ConfigMap/" + ns + "/notes"))
	g.Expect(r.out).NotTo(ContainSubstring("source HelmRepository/charts"))
}
