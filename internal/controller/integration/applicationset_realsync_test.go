package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// With the real Application controller (no stand-in): a RollingSync holds the second
// step's Application at the old revision while the first step's fails to build the new
// one; the rollout halts naming it, and the second step's objects keep the old values.
func TestApplicationSetRollingSyncRealSyncs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("fleet")
	sha1 := f.repo.Commit("main", "one", map[string]string{"apps/a/cm.yaml": configMapYAML("cm-a", "1"), "apps/b/cm.yaml": configMapYAML("cm-b", "1")})
	newGitRepository(t, ns, "repo", f.srv.HTTPURL("fleet"), nil, "")
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rollout", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Include: []string{"apps/*"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}", Labels: map[string]string{"step": "{{ .path.basename }}"}},
				Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Path: "{{ .path.path }}", TargetNamespace: ns},
			},
			Strategy: &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, Steps: []gitsyncv1.RollingSyncStep{
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "a"}}},
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "b"}}},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		r := rolloutOf(g, ns)
		return r.Revision == "main@sha1:"+sha1 && r.CurrentStep == 2
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(f.configMap(g, "cm-b").Data["value"]).To(Equal("1"))

	sha2 := f.repo.Commit("main", "two", map[string]string{"apps/a/cm.yaml": "kind: ConfigMap\nmetadata: [not, a, map\n", "apps/b/cm.yaml": configMapYAML("cm-b", "2")})
	editRepo(g, ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "two"}
	})
	g.Eventually(func(g Gomega) string {
		r := rolloutOf(g, ns)
		if r.Revision != "main@sha1:"+sha2 {
			return ""
		}
		return r.Halted
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("Application a"))
	g.Consistently(func(g Gomega) string { return f.configMap(g, "cm-b").Data["value"] }).
		WithTimeout(3 * time.Second).WithPolling(300 * time.Millisecond).Should(Equal("1"))
	g.Expect(held(g, ns, "b")).To(BeTrue())
	g.Expect(f.get(g, "b").Status.LastAppliedRevision).To(Equal("main@sha1:" + sha1))

	// The fix is a new revision: a new rollout, a first, then b.
	sha3 := f.repo.Commit("main", "three", map[string]string{"apps/a/cm.yaml": configMapYAML("cm-a", "3")})
	editRepo(g, ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "three"}
	})
	g.Eventually(func(g Gomega) bool {
		r := rolloutOf(g, ns)
		return r.Revision == "main@sha1:"+sha3 && r.CurrentStep == 2
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(f.configMap(g, "cm-a").Data["value"]).To(Equal("3"))
	g.Expect(f.configMap(g, "cm-b").Data["value"]).To(Equal("2"))
}
