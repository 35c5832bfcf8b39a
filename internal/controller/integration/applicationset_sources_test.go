package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A RollingSync rollout of generated Applications of two Git sources each (spec.sources)
// rolls out their joined revision: a commit to the second repository alone is a new
// rollout, step by step, and both Applications end at it.
func TestApplicationSetRollingSyncOfSeveralSources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("fleet")
	f.repo.Commit("main", "one", map[string]string{"apps/a/cm.yaml": configMapYAML("cm-a", "1"), "apps/b/cm.yaml": configMapYAML("cm-b", "1")})
	extra := f.srv.CreateRepo("extra")
	extra.Commit("main", "one", map[string]string{"apps/a/x.yaml": configMapYAML("x-a", "1"), "apps/b/x.yaml": configMapYAML("x-b", "1")})
	newGitRepository(t, ns, "repo", f.srv.HTTPURL("fleet"), nil, "")
	newGitRepository(t, ns, "extra", f.srv.HTTPURL("extra"), nil, "")
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rollout", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Include: []string{"apps/*"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}", Labels: map[string]string{"step": "{{ .path.basename }}"}},
				Spec: gitsyncv1.ApplicationSpec{TargetNamespace: ns, Sources: []gitsyncv1.ApplicationSource{
					{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}, Path: "{{ .path.path }}"},
					{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "extra"}, Path: "{{ .path.path }}"},
				}},
			},
			Strategy: &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, Steps: []gitsyncv1.RollingSyncStep{
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "a"}}},
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "b"}}},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) int32 { return rolloutOf(g, ns).CurrentStep }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(int32(2)))
	first := rolloutOf(g, ns).Revision
	g.Expect(first).To(And(ContainSubstring("GitRepository/repo@main@sha1:"), ContainSubstring("GitRepository/extra@main@sha1:")))
	g.Expect(f.configMap(g, "x-b").Data["value"]).To(Equal("1"))

	sha2 := extra.Commit("main", "two", map[string]string{"apps/a/x.yaml": configMapYAML("x-a", "2"), "apps/b/x.yaml": configMapYAML("x-b", "2")})
	editRepo(g, ns, "extra", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "two"}
	})
	g.Eventually(func(g Gomega) bool {
		r := rolloutOf(g, ns)
		return strings.Contains(r.Revision, "GitRepository/extra@main@sha1:"+sha2) && r.CurrentStep == 2
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(f.configMap(g, "x-a").Data["value"]).To(Equal("2"))
	g.Expect(f.configMap(g, "x-b").Data["value"]).To(Equal("2"))
	g.Expect(f.get(g, "b").Status.LastAppliedRevision).To(ContainSubstring("GitRepository/extra@main@sha1:" + sha2))
}
