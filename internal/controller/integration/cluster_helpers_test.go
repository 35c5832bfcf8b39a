package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/localcluster"
)

// remoteCluster is a second API server started for one test (stopped when it ends,
// failed or not) and an admin client of it.
type remoteCluster struct {
	*localcluster.Cluster
	client client.Client
}

func startRemote(t testing.TB) *remoteCluster {
	t.Helper()
	c, err := localcluster.Start()
	if err != nil {
		t.Fatalf("starting the remote API server: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Logf("stopping the remote API server: %v", err)
		}
	})
	cl, err := client.New(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &remoteCluster{Cluster: c, client: cl}
}

// namespace creates ns on the remote cluster.
func (r *remoteCluster) namespace(t testing.TB, ns string) {
	t.Helper()
	if err := r.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}

// register makes a Secret holding the remote's admin kubeconfig and a Cluster named
// name in ns, and waits until the Cluster is Ready.
func (r *remoteCluster) register(t testing.TB, ns, name string) {
	t.Helper()
	kubeconfig, err := r.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	createCluster(t, ns, name, kubeconfig)
	waitClusterReady(t, ns, name)
}

func createCluster(t testing.TB, ns, name string, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ns},
		Data: map[string][]byte{gitsyncv1.DefaultKubeConfigKey: kubeconfig}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cl := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: secret.Name}}}}
	if err := env.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
}

func getCluster(g Gomega, ns, name string) *gitsyncv1.Cluster {
	cl := &gitsyncv1.Cluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cl)).To(Succeed())
	return cl
}

func waitClusterReady(t testing.TB, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cl := getCluster(g, ns, name)
		ready := apimeta.FindStatusCondition(cl.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(cl.Status.KubernetesVersion).NotTo(BeEmpty())
		g.Expect(cl.Status.LastProbeTime).NotTo(BeNil())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

// onCluster makes an Application target the Cluster name.
func onCluster(name string) func(*gitsyncv1.Application) {
	return func(app *gitsyncv1.Application) { app.Spec.Cluster = &gitsyncv1.ClusterReference{Name: name} }
}

// remoteConfigMap reads a ConfigMap of the remote cluster; nil when it does not exist.
func (r *remoteCluster) configMap(g Gomega, ns, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	err := r.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm
}
