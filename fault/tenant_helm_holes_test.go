package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// namedChart is a chart in dir whose one template is tpl followed by a ConfigMap named
// cm with value.
func namedChart(dir, cm, value, tpl string) map[string]string {
	return map[string]string{
		filepath.Join(dir, "Chart.yaml"):          "apiVersion: v2\nname: " + cm + "\nversion: 0.1.0\n",
		filepath.Join(dir, "templates/main.yaml"): tpl + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + cm + "}\ndata: {value: \"" + value + "\"}\n",
	}
}

func merged(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// renderLimitReasons are the reasons a render stopped by a bound may carry.
var renderLimitReasons = []string{gitsyncv1.BuildFailedReason, gitsyncv1.RenderLimitExceededReason}

// Issue 34, item 2 (".helmignore followed through a symlink"), as a tenant would: a chart
// whose .helmignore links to /dev/zero (read, it takes the operator's memory without
// end), and one whose .helmignore and values.yaml link to a file outside the checkout
// holding a secret (the pod's token, another tenant's file). Each Application fails
// alone, the secret appears nowhere (status, objects), the last good objects stay, the
// operator is the same process, and another namespace's chart syncs meanwhile.
func TestHelmChartSymlinksOutOfTheCheckout(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()

	secret := "stolen-token-" + strings.Repeat("q", 12)
	secretFile := filepath.Join(workDir, "helm-holes-token")
	g.Expect(os.WriteFile(secretFile, []byte("*\n!"+secret+"\n"+secret+"\n"), 0o644)).To(Succeed())

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	zero, zeroSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	steal, stealSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	other.waitApplied(otherSHA, time.Minute)
	zero.waitApplied(zeroSHA, time.Minute)
	steal.waitApplied(stealSHA, time.Minute)

	zeroSHA = zero.repo.CommitFunc("main", ".helmignore to /dev/zero", func(wt string) {
		g.Expect(os.Symlink("/dev/zero", filepath.Join(wt, ".helmignore"))).To(Succeed())
	})
	stealSHA = steal.repo.CommitFunc("main", ".helmignore and values.yaml to a token", func(wt string) {
		g.Expect(os.Symlink(secretFile, filepath.Join(wt, ".helmignore"))).To(Succeed())
		g.Expect(os.Symlink(secretFile, filepath.Join(wt, "values.yaml"))).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(wt, "templates", "main.yaml"),
			[]byte(configMapTemplate("{{ .Values | toJson | b64enc }}")), 0o644)).To(Succeed())
	})

	for _, f := range []*fixture{zero, steal} {
		cond := f.waitNotReady(map[*fixture]string{zero: zeroSHA, steal: stealSHA}[f], time.Minute,
			gitsyncv1.BuildFailedReason, gitsyncv1.ArtifactNotReadyReason, gitsyncv1.FetchFailedReason)
		t.Logf("%s: %s: %s", f.ns, cond.Reason, cond.Message)
		g.Expect(cond.Message).To(ContainSubstring("symlink"))
	}

	// Meanwhile and after, the other tenant's chart syncs.
	sha := other.repo.Commit("main", "after the symlinks", chartFiles(configMapTemplate("1")))
	other.waitApplied(sha, 20*time.Second)

	// The attacker got nothing: not in status, not in objects; the last good objects stay.
	for _, f := range []*fixture{zero, steal} {
		app := f.app(g)
		status, err := json.Marshal(app.Status)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(status)).NotTo(ContainSubstring(secret))
		cms := &corev1.ConfigMapList{}
		g.Expect(env.Client.List(context.Background(), cms, client.InNamespace(f.ns))).To(Succeed())
		for _, cm := range cms.Items {
			data, _ := json.Marshal(cm.Data)
			g.Expect(string(data)).NotTo(ContainSubstring(secret))
			g.Expect(string(data)).NotTo(ContainSubstring("c3RvbGVu"), "base64 of the token")
		}
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "cm"}, cm)).To(Succeed())
		g.Expect(cm.Data["value"]).To(Equal("good"))
	}
	before.expectAlive(g)
}

// Issue 34, item 2 ("template output and render slots"), as a tenant would: three
// Applications of one namespace whose charts loop for long without calling a function
// (a list made once, ranged over 40,000² times: longer than the render deadline, and
// nothing in the template to stop it) hold the render slots, each retried at once. Another
// namespace's chart Application still syncs each new revision in normal time while they
// loop; the looping Applications fail with a render limit, their last good objects stay,
// and the operator is the same process throughout. Before, the three loops took both
// slots and kept them (a loop could not be stopped before its deadline and then went on
// in the background, its slot kept once one was abandoned): every other chart waited.
func TestHelmLoopsCannotStarveOtherNamespaces(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	dirs := []string{"a", "b", "c"}
	good := map[string]string{}
	for _, d := range dirs {
		good = merged(good, namedChart(d, "cm-"+d, "good", ""))
	}
	loops, loopSHA := newFixture(t, good, time.Second, func(app *gitsyncv1.Application) { app.Spec.Path = "./a" })
	for _, d := range dirs[1:] {
		app := &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: "app-" + d, Namespace: loops.ns},
			Spec: gitsyncv1.ApplicationSpec{
				SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: repoName},
				Path:      "./" + d,
				Prune:     true,
			},
		}
		g.Expect(env.Client.Create(context.Background(), app)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), app) })
	}
	other.waitApplied(otherSHA, time.Minute)
	loops.waitApplied(loopSHA, time.Minute)
	g.Eventually(func(g Gomega) {
		for _, d := range dirs {
			cm := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: loops.ns, Name: "cm-" + d}, cm)).To(Succeed())
		}
	}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed())

	pureLoop := "{{ $l := until 40000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}"
	var looping map[string]string
	for _, d := range dirs {
		looping = merged(looping, namedChart(d, "cm-"+d, "never", pureLoop))
	}
	start := time.Now()
	loopSHA = loops.repo.Commit("main", "three charts that loop", looping)

	// While they loop, the other tenant's new revisions are applied in normal time.
	for i := 1; i <= 3; i++ {
		sha := other.repo.Commit("main", fmt.Sprint("revision ", i), chartFiles(configMapTemplate(fmt.Sprint(i))))
		begin := time.Now()
		other.waitApplied(sha, 20*time.Second)
		t.Logf("the other tenant's revision %d applied in %v (%v after the loops were pushed)", i,
			time.Since(begin).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	}

	cond := loops.waitNotReady(loopSHA, 2*time.Minute, renderLimitReasons...)
	t.Logf("the looping Application failed after %v: %s: %s", time.Since(start).Round(100*time.Millisecond), cond.Reason, cond.Message)
	g.Expect(cond.Message).To(Or(ContainSubstring("loop more than"), ContainSubstring("render took longer")))
	sha := other.repo.Commit("main", "after the loops failed", chartFiles(configMapTemplate("after")))
	other.waitApplied(sha, 20*time.Second)

	for _, d := range dirs {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: loops.ns, Name: "cm-" + d}, cm)).To(Succeed())
		g.Expect(cm.Data["value"]).To(Equal("good"), "cm-%s keeps the last good value", d)
	}
	before.expectAlive(g)
}
