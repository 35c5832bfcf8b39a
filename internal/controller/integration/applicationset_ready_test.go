package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// An ApplicationSet is Ready only while its Applications are: one of them failing to
// build makes the set Ready=False/ApplicationsNotReady naming it and its reason (before,
// the set said Ready=True, "2 Applications generated"); the fix makes both Ready again.
func TestApplicationSetNotReadyWhileAnApplicationFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("fleet")
	f.repo.Commit("main", "one", map[string]string{
		"apps/a/cm.yaml": configMapYAML("cm-a", "1"),
		"apps/b/cm.yaml": "kind: ConfigMap\nmetadata: [not, a, map\n",
	})
	newGitRepository(t, ns, "repo", f.srv.HTTPURL("fleet"), nil, "")
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Include: []string{"apps/*"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}"},
				Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Path: "{{ .path.path }}", TargetNamespace: ns},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	setReady := func(g Gomega) metav1.Condition {
		ready := apimeta.FindStatusCondition(getSet(g, ns, "fleet").Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		return *ready
	}
	g.Eventually(setReady).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", gitsyncv1.ApplicationsNotReadyReason),
		HaveField("Message", And(HavePrefix("1 of 2 Applications not Ready: b ("), Not(ContainSubstring("a ("))))))
	g.Expect(f.configMap(g, "cm-a").Data["value"]).To(Equal("1"))

	sha := f.repo.Commit("main", "fixed", map[string]string{"apps/b/cm.yaml": configMapYAML("cm-b", "1")})
	f.waitApplied("b", sha)
	g.Eventually(setReady).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Message", "2 Applications generated")))
}
