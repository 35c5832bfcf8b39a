package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// An Application with spec.cluster applies to the remote API server (nothing here),
// prunes there, and its deletion deletes its objects there.
func TestClusterApplicationAppliesPrunesAndDeletesRemotely(t *testing.T) {
	g := NewWithT(t)
	remote := startRemote(t)
	f, sha := newAppFixture(t, map[string]string{
		"one.yaml": configMapYAML("one", "1"),
		"two.yaml": configMapYAML("two", "2"),
	})
	remote.namespace(t, f.ns)
	remote.register(t, f.ns, "remote")
	f.app("app", onCluster("remote"), func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))
	g.Expect(app.Status.ServiceAccount).To(ContainSubstring("Cluster " + f.ns + "/remote"))
	one := remote.configMap(g, f.ns, "one")
	g.Expect(one).NotTo(BeNil())
	g.Expect(one.Data).To(HaveKeyWithValue("value", "1"))
	g.Expect(one.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "app"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "one")).To(BeFalse(), "applied to the local cluster")

	// Drift on the remote cluster is corrected there.
	one.Data["value"] = "edited by hand"
	g.Expect(remote.client.Update(context.Background(), one)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		return remote.configMap(g, f.ns, "one").Data["value"]
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))

	// What leaves Git is pruned there.
	sha2 := f.repo.Commit("main", "drop two", map[string]string{"two.yaml": ""})
	f.waitApplied("app", sha2)
	g.Eventually(func(g Gomega) *corev1.ConfigMap {
		return remote.configMap(g, f.ns, "two")
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeNil())
	g.Expect(remote.configMap(g, f.ns, "one")).NotTo(BeNil())

	// Deleting the Application deletes its objects there.
	g.Expect(env.Client.Delete(context.Background(), f.get(g, "app"))).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "app"}, &gitsyncv1.Application{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(remote.configMap(g, f.ns, "one")).To(BeNil())
}

// While the remote API server is down, nothing is pruned: the Application says the
// cluster is unreachable, health is Unknown (not Failed), and once the server is back
// the new revision is synced and pruned.
func TestClusterUnreachableNeverPrunesAndRecovers(t *testing.T) {
	g := NewWithT(t)
	remote := startRemote(t)
	f, sha := newAppFixture(t, map[string]string{
		"one.yaml": configMapYAML("one", "1"),
		"two.yaml": configMapYAML("two", "2"),
	})
	remote.namespace(t, f.ns)
	remote.register(t, f.ns, "remote")
	f.app("app", onCluster("remote"), func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)

	var sha2 string
	err := remote.RestartAPIServerAfter(func() {
		sha2 = f.repo.Commit("main", "drop two", map[string]string{"two.yaml": ""})
		msg := f.waitNotReady("app", gitsyncv1.ClusterUnreachableReason)
		g.Expect(msg).To(ContainSubstring("Cluster " + f.ns + "/remote is unreachable"))
		app := f.get(g, "app")
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusUnknown))
		g.Expect(app.Status.Inventory.Entries).To(HaveLen(2), "nothing left the inventory")
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		for _, h := range app.Status.History {
			g.Expect(h.Result).NotTo(Equal(gitsyncv1.SyncResultFailed), "an unreachable cluster is no failed sync")
		}
		g.Eventually(func(g Gomega) {
			ready := apimeta.FindStatusCondition(getCluster(g, f.ns, "remote").Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(gitsyncv1.ClusterUnreachableReason))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	})
	g.Expect(err).NotTo(HaveOccurred())
	f.waitApplied("app", sha2)
	g.Eventually(func(g Gomega) *corev1.ConfigMap {
		return remote.configMap(g, f.ns, "two")
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeNil())
	g.Expect(remote.configMap(g, f.ns, "one")).NotTo(BeNil())
	g.Expect(f.get(g, "app").Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))
	// The Cluster's reachability changes were events (what Alerts route).
	g.Eventually(func(g Gomega) []string {
		var reasons []string
		for _, e := range eventsFor(g, f.ns, "remote") {
			reasons = append(reasons, e.Type+"/"+e.Reason)
		}
		return reasons
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElements(
		"Warning/"+gitsyncv1.ClusterUnreachableReason, "Normal/"+gitsyncv1.ClusterReachableReason))
}

// A kubeconfig with an exec plugin is refused: its command never runs in the operator,
// the Cluster and its Applications say why.
func TestClusterKubeConfigExecPluginRefused(t *testing.T) {
	g := NewWithT(t)
	marker := filepath.Join(t.TempDir(), "ran")
	kubeconfig := []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "touch ` + marker + `"]
      interactiveMode: Never
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
	f, _ := newAppFixture(t, map[string]string{"one.yaml": configMapYAML("one", "1")})
	createCluster(t, f.ns, "exec", kubeconfig)
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getCluster(g, f.ns, "exec").Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(gitsyncv1.KubeConfigInvalidReason))
		g.Expect(ready.Message).To(ContainSubstring("exec plugins are not allowed"))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	f.app("app", onCluster("exec"))
	msg := f.waitNotReady("app", gitsyncv1.ClusterNotReadyReason)
	g.Expect(msg).To(ContainSubstring("exec plugins are not allowed"))
	_, err := os.Stat(marker)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran")
}

// A Cluster of another namespace is refused, as a cross-namespace source is.
func TestClusterInAnotherNamespaceRefused(t *testing.T) {
	g := NewWithT(t)
	f, _ := newAppFixture(t, map[string]string{"one.yaml": configMapYAML("one", "1")})
	other := env.Namespace(t)
	createCluster(t, other, "theirs", []byte("not read"))
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.Cluster = &gitsyncv1.ClusterReference{Name: "theirs", Namespace: other}
	})
	msg := f.waitNotReady("app", gitsyncv1.AccessDeniedReason)
	g.Expect(msg).To(ContainSubstring("cluster names Cluster " + other + "/theirs in another namespace"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "one")).To(BeFalse())
}

// With selfHeal off, drift on the remote cluster is reported, naming the writer, and
// left as it is.
func TestClusterDriftReportedWithSelfHealOff(t *testing.T) {
	g := NewWithT(t)
	remote := startRemote(t)
	f, sha := newAppFixture(t, map[string]string{"one.yaml": configMapYAML("one", "1")})
	remote.namespace(t, f.ns)
	remote.register(t, f.ns, "remote")
	f.app("app", onCluster("remote"), func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	f.waitApplied("app", sha)

	one := remote.configMap(g, f.ns, "one")
	one.Data["value"] = "edited by hand"
	g.Expect(remote.client.Update(context.Background(), one, client.FieldOwner("kubectl-edit"))).To(Succeed())
	msg := f.waitNotReady("app", gitsyncv1.DriftDetectedReason)
	g.Expect(msg).To(ContainSubstring("on Cluster " + f.ns + "/remote: ConfigMap/" + f.ns + "/one changed by kubectl-edit"))
	app := f.get(g, "app")
	g.Expect(app.Status.Drift).To(HaveLen(1))
	g.Expect(app.Status.Drift[0].Object).To(Equal("ConfigMap/" + f.ns + "/one"))
	g.Expect(app.Status.Drift[0].Managers).To(ConsistOf("kubectl-edit"))
	g.Consistently(func(g Gomega) string {
		return remote.configMap(g, f.ns, "one").Data["value"]
	}).WithTimeout(2 * time.Second).WithPolling(pollInterval).Should(Equal("edited by hand"))
}
