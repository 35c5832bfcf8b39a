package operations_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/localcluster"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// tree and diff of an Application with spec.cluster read its Cluster's API server.
func TestTreeAndDiffFollowTheApplicationToItsCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remote, err := localcluster.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })
	rc, err := client.New(remote.Config, client.Options{Scheme: remote.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	ns := env.Namespace(t)
	g.Expect(rc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(rc.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: ns,
		Labels: map[string]string{gitsyncv1.ApplicationLabel: "app", gitsyncv1.ApplicationNamespaceLabel: ns}},
		Data: map[string]string{"value": "live"}})).To(Succeed())
	kubeconfig, err := remote.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: ns},
		Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: ns},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: "kc"}}}})).To(Succeed())
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
			Cluster: &gitsyncv1.ClusterReference{Name: "remote"}}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	app.Status.Inventory = &gitsyncv1.Inventory{Entries: []gitsyncv1.InventoryEntry{{ID: ns + "_one__ConfigMap", V: "v1"}}}
	g.Expect(env.Client.Status().Update(ctx, app)).To(Succeed())

	nodes, err := operations.Tree(ctx, env.Client, app, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(1))
	g.Expect(nodes[0].ID).To(Equal("ConfigMap/" + ns + "/one"))
	g.Expect(nodes[0].Health).To(Equal(gitsyncv1.HealthStatusHealthy), "read on the remote cluster, where it exists")

	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName("one")
	obj.SetNamespace(ns)
	g.Expect(unstructured.SetNestedField(obj.Object, "git", "data", "value")).To(Succeed())
	d, err := operations.DiffRendered(ctx, env.Client, app, operations.NewRendered(&render.Result{Objects: []*unstructured.Unstructured{obj}}, "test"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Outcomes).To(HaveLen(1))
	g.Expect(d.Outcomes[0].Action).To(Equal(drift.Configured), "compared with the remote object")
	g.Expect(d.Outcomes[0].Diff).To(ContainSubstring("live"))

	// Without the Cluster, nothing is read from elsewhere.
	app.Spec.Cluster.Name = "absent"
	_, err = operations.Tree(ctx, env.Client, app, false)
	g.Expect(err).To(MatchError(ContainSubstring("reading Cluster " + ns + "/absent")))
}
