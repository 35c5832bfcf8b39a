package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/localcluster"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// remoteApp is an Application synced to a Cluster (a second API server of its own): a
// ConfigMap "settings" that exists only there.
type remoteApp struct {
	ns     string
	app    *gitsyncv1.Application
	remote client.Client
}

func newRemoteApp(t *testing.T) *remoteApp {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	remote, err := localcluster.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = remote.Stop() })
	rc, err := client.New(remote.Config, client.Options{Scheme: remote.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	r := &remoteApp{ns: env.Namespace(t), remote: rc}
	g.Expect(rc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}})).To(Succeed())
	kubeconfig, err := remote.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: r.ns},
		Data: map[string][]byte{"value": kubeconfig}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: r.ns},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: "kc"}}}})).To(Succeed())
	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("app").Commit("main", "first", map[string]string{
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: from-git\n"})
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-repo", Namespace: r.ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	r.app = &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "edge-app", Namespace: r.ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path: "./app", SelfHeal: ptr.To(false), Cluster: &gitsyncv1.ClusterReference{Name: "edge"}}}
	g.Expect(env.Client.Create(ctx, r.app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.app), r.app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(r.app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(90 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())
	return r
}

// The page of an Application with spec.cluster names its Cluster, and its tree and object
// views read the objects there: the ConfigMap exists only on the remote API server.
func TestApplicationOnAClusterReadsItsObjectsThere(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r := newRemoteApp(t)
	srv := startUI(t, env.Config, ui.Options{Diff: operations.ObjectDiffsFromSource})
	base := srv.URL + "/api/apps/" + r.ns + "/edge-app"
	id := "ConfigMap/" + r.ns + "/settings"

	local := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "settings"}, local)).NotTo(Succeed(), "synced to the remote cluster only")

	var d ui.AppDetail
	resp, body := get(t, base)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
	g.Expect(d.Cluster).To(Equal(r.ns + "/edge"))
	g.Expect(d.Tree).To(HaveLen(1))
	g.Expect(d.Tree[0].ID).To(Equal(id))
	g.Expect(d.Tree[0].Health).To(Equal(gitsyncv1.HealthStatusHealthy), "read where it exists")

	// The live object (and the diff against it) come from the remote cluster.
	cm := &corev1.ConfigMap{}
	g.Expect(r.remote.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "settings"}, cm)).To(Succeed())
	cm.Data["greeting"] = "edited-remotely"
	g.Expect(r.remote.Update(ctx, cm)).To(Succeed())
	var view ui.ObjectView
	resp, body = get(t, base+"/object?id="+id)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(json.Unmarshal([]byte(body), &view)).To(Succeed())
	g.Expect(view.Live).To(ContainSubstring("edited-remotely"))
	g.Expect(view.Git).To(ContainSubstring("from-git"))
	g.Expect(view.Diff).To(ContainSubstring("edited-remotely"), "diffed with the remote object")

	resp, body = get(t, srv.URL+"/apps/"+r.ns+"/edge-app")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`id="target-cluster"`))
	g.Expect(body).To(ContainSubstring("<code>" + r.ns + "/edge</code>"))
}
