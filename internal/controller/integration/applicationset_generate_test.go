package integration

import (
	"context"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// newCluster creates a Cluster (its probe fails: it has no kubeconfig Secret) with labels
// and a reported version.
func newCluster(t *testing.T, ns, name, version string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	c := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: name + "-kubeconfig"}}}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	// A merge patch: the Cluster controller may write its probe's status meanwhile.
	base := client.MergeFrom(c.DeepCopy())
	c.Status.KubernetesVersion = version
	if err := env.Client.Status().Patch(ctx, c, base); err != nil {
		t.Fatal(err)
	}
}

// generatedApps lists the Applications carrying the set's label, by name.
func generatedApps(g Gomega, ns, set string) map[string]gitsyncv1.Application {
	list := &gitsyncv1.ApplicationList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{gitsyncv1.ApplicationSetLabel: set})).To(Succeed())
	out := map[string]gitsyncv1.Application{}
	for _, a := range list.Items {
		out[a.Name] = a
	}
	return out
}

func keysOf(m map[string]gitsyncv1.Application) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func getSet(g Gomega, ns, name string) *gitsyncv1.ApplicationSet {
	set := &gitsyncv1.ApplicationSet{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, set)).To(Succeed())
	return set
}

// An ApplicationSet with a matrix of gitDirectories × clusters makes one Application per
// directory and cluster; a directory removed from Git deletes exactly its Applications;
// a hand edit is reverted; preserveOnDeletion orphans the Applications of a deleted set.
func TestApplicationSetMatrixGitDirectoriesClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "initial", map[string]string{
		"apps/web/cm.yaml": configMapYAML("web", "1"), "apps/api/cm.yaml": configMapYAML("api", "1"),
		"apps/legacy/cm.yaml": configMapYAML("legacy", "1"), "README.md": "fleet",
	})
	newGitRepository(t, ns, "repo", srv.HTTPURL("fleet"), nil, "")
	newCluster(t, ns, "east", "v1.37.1", map[string]string{"env": "prod"})
	newCluster(t, ns, "west", "v1.36.2", map[string]string{"env": "prod"})
	newCluster(t, ns, "dev", "v1.37.1", map[string]string{"env": "dev"})

	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{Matrix: &gitsyncv1.MatrixGenerator{Generators: []gitsyncv1.ApplicationSetBaseGenerator{
				{GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"},
					Include: []string{"apps/*"}, Exclude: []string{"apps/legacy"}}},
				{Clusters: &gitsyncv1.ClustersGenerator{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
			}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}-{{ .name }}",
					Labels: map[string]string{"cluster": "{{ .name }}", "version": "{{ .kubernetesVersion }}"}},
				Spec: gitsyncv1.ApplicationSpec{
					SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Path:      "{{ .path.path }}",
					Cluster:   &gitsyncv1.ClusterReference{Name: "{{ .name }}"},
					Suspend:   true, // the Clusters are not reachable here: only the generated objects are under test
				},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "fleet")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"api-east", "api-west", "web-east", "web-west"}))
	apps := generatedApps(g, ns, "fleet")
	webEast := apps["web-east"]
	g.Expect(webEast.Spec.Path).To(Equal("apps/web"))
	g.Expect(webEast.Spec.Cluster.Name).To(Equal("east"))
	g.Expect(webEast.Labels).To(HaveKeyWithValue("version", "v1.37.1"))
	g.Expect(apps["api-west"].Labels).To(HaveKeyWithValue("version", "v1.36.2"))
	g.Expect(metav1.IsControlledBy(&webEast, getSet(g, ns, "fleet"))).To(BeTrue())
	g.Eventually(func(g Gomega) []string { return getSet(g, ns, "fleet").Status.Applications }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"api-east", "api-west", "web-east", "web-west"}))

	// A directory removed from Git deletes exactly its Applications.
	repo.Commit("main", "drop api", nil, "apps/api/cm.yaml")
	editRepo(g, ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "drop-api"}
	})
	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "fleet")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"web-east", "web-west"}))
	after := generatedApps(g, ns, "fleet")
	g.Expect(after["web-east"].UID).To(Equal(webEast.UID), "the Applications that stay are not recreated")
	g.Expect(after["web-west"].UID).To(Equal(apps["web-west"].UID))

	// A hand edit of a templated field is reverted.
	edited := after["web-east"]
	base := client.MergeFrom(edited.DeepCopy())
	edited.Spec.Path = "apps/elsewhere"
	g.Expect(env.Client.Patch(ctx, &edited, base)).To(Succeed())
	g.Eventually(func(g Gomega) string { return generatedApps(g, ns, "fleet")["web-east"].Spec.Path }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("apps/web"))

	// So is a hand edit of a field the template leaves out.
	edited = generatedApps(g, ns, "fleet")["web-west"]
	base = client.MergeFrom(edited.DeepCopy())
	edited.Spec.TargetNamespace = "by-hand"
	g.Expect(env.Client.Patch(ctx, &edited, base)).To(Succeed())
	g.Eventually(func(g Gomega) string { return generatedApps(g, ns, "fleet")["web-west"].Spec.TargetNamespace }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeEmpty())

	// preserveOnDeletion: the set's deletion orphans its Applications.
	s := getSet(g, ns, "fleet")
	base = client.MergeFrom(s.DeepCopy())
	s.Spec.PreserveOnDeletion = true
	g.Expect(env.Client.Patch(ctx, s, base)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return getSet(g, ns, "fleet").Finalizers }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(gitsyncv1.Finalizer))
	g.Expect(env.Client.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(s), &gitsyncv1.ApplicationSet{}))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	for _, name := range []string{"web-east", "web-west"} {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, app)).To(Succeed())
		g.Expect(app.OwnerReferences).To(BeEmpty())
		g.Expect(app.Labels).NotTo(HaveKey(gitsyncv1.ApplicationSetLabel))
	}
}

// A generator that cannot read its source deletes nothing, and says why.
func TestApplicationSetFailedGeneratorDeletesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "nosuch"}, Include: []string{"*"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}"},
				Spec:     gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "nosuch"}, Suspend: true},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		s := getSet(g, ns, "broken")
		for _, c := range s.Status.Conditions {
			if c.Type == gitsyncv1.ReadyCondition && c.Status == metav1.ConditionFalse {
				return c.Reason + ": " + c.Message
			}
		}
		return ""
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(HavePrefix(gitsyncv1.GenerateFailedReason), ContainSubstring("GitRepository nosuch")))
}
