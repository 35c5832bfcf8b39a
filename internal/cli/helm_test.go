package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// An Application of a HelmRepository chart: `get sources` lists the HelmRepository
// next to the GitRepositories, `reconcile app --with-source` polls the repository's
// index so a new chart version is applied now, `diff` and `build` pull and render the
// chart (or an unpacked copy), and `rollback` says how to pin a chart.
func TestHelmRepositoryCommands(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := chartserver.NewRepo(t)
	srv.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
		Data: map[string][]byte{"ca.crt": srv.CA}})).To(Succeed())
	// A poll an hour apart: only a requested reconcile fetches the index again.
	g.Expect(env.Client.Create(ctx, &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: srv.URL, Interval: &metav1.Duration{Duration: time.Hour},
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "ca"}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: "http://127.0.0.1:1/nothing.git"},
	})).To(Succeed())
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
			Helm:      &gitsyncv1.HelmSpec{Chart: "web"},
		},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	waitChart := func(revision string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			g.Expect(app.Status.LastAppliedRevision).To(Equal(revision))
			g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	waitChart("web@1.0.0")

	r := gitsync(t, "get", "sources", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	// One table of both kinds, each row named KIND/NAME, without an Application's SYNC
	// and HEALTH.
	g.Expect(r.out).To(MatchRegexp(`(?m)^gitrepository/git\s+False\s+-\s+`), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^helmrepository/charts\s+True\s+sha256:[0-9a-f]{64}\s`), r.String())
	g.Expect(strings.Count(r.out, "NAME")).To(Equal(1), "one table of sources: %s", r.out)
	r = gitsync(t, "get", "source", "charts", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`^charts\s+True`))
	r = gitsync(t, "get", "helmrepos", "-n", ns, "-o", "json")
	g.Expect(r.code).To(Equal(0), r.String())
	var list struct {
		Items []gitsyncv1.HelmRepository `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(r.out), &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Kind).To(Equal(gitsyncv1.HelmRepositoryKind))
	g.Expect(list.Items[0].Spec.URL).To(Equal(srv.URL))
	r = gitsync(t, "get", "apps", "-n", ns)
	g.Expect(r.out).To(MatchRegexp(`(?m)^web\s+True\s+Synced\s+\S+\s+web@1\.0\.0`), r.String())

	// A new chart version: the repository polls again on request, and the app applies it.
	srv.Add("web", "1.1.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.1.0")))
	r = gitsync(t, "reconcile", "app", "web", "--with-source", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ HelmRepository " + ns + "/charts: index sha256:"))
	g.Expect(r.out).To(ContainSubstring("✔ Application " + ns + "/web: applied revision web@1.1.0"))
	waitChart("web@1.1.0")
	r = gitsync(t, "reconcile", "helmrepo", "charts", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	r = gitsync(t, "tree", "app", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("web-settings"))

	// diff and build from the source: the chart version is pulled from the repository
	// and rendered as the operator did: no change, then the change a new value makes.
	r = gitsync(t, "diff", "app", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("revision web@1.1.0"))
	r = gitsync(t, "build", "app", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("name: web-settings"))
	setVersion := func(v string) {
		g.Expect(env.Client.Patch(ctx, app, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"helm":{"version":"`+v+`"}}}`)))).To(Succeed())
	}
	setVersion("1.0.0")
	r = gitsync(t, "diff", "app", "web", "-n", ns)
	g.Expect(r.out).To(ContainSubstring("revision web@1.0.0"), r.String())
	waitChart("web@1.0.0")
	setVersion("")
	waitChart("web@1.1.0")
	// The chart unpacked locally renders as the operator did: no change.
	files := map[string]string{}
	for name, content := range chartserver.ConfigMapChart("web", "1.1.0") {
		files["app/"+name] = content
	}
	r = gitsync(t, "diff", "app", "web", "-n", ns, "--path", localCopy(t, files))
	g.Expect(r.code).To(Equal(0), r.String())

	r = gitsync(t, "rollback", "app", "web", "--to", "web@1.0.0", "-n", ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("pin the chart version instead (spec.helm.version"))

	r = gitsync(t, "suspend", "helmrepo", "charts", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(gitsync(t, "get", "helmrepos", "-n", ns).out).To(MatchRegexp(`(?m)^charts\s.*suspended`))
}

// `get sources -w` watches both source kinds: a HelmRepository made after the listing
// is printed, marked as one.
func TestGetSourcesWatchesHelmRepositories(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := startWatch(ctx, "get", "sources", "-w", "-n", ns)
	g.Expect(env.Client.Create(ctx, &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: "https://127.0.0.1:1/charts"},
	})).To(Succeed())
	// Nothing answers at that address: the watch prints the row with Ready False.
	g.Eventually(out.String).WithTimeout(30 * time.Second).Should(MatchRegexp(`(?m)^helmrepository/late\s+False\s`))
	cancel()
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(Equal(0)))
}
