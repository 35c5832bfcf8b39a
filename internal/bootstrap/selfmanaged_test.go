package bootstrap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/uninstall"
)

// The operator (out of process, in tenant mode as config/default runs it) syncs the
// bootstrapped path: the self-managing Application applies gitsync's own objects and
// what else is committed below the path; a second bootstrap then finds nothing to do;
// uninstall removes gitsync and leaves the workloads, even with that operator running.
func TestBootstrapSelfManaged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gitsync binary")
	}
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	binary, err := gitsyncproc.Build(dir)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := env.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())

	srv := gittest.NewServer(t, gittest.Options{Username: "fleet-bot", Password: "pa55-w0rd"})
	repo := srv.CreateRepo("self")
	var out bytes.Buffer
	opts := Options{URL: srv.HTTPURL("self"), Branch: "main", Path: "clusters/dev",
		Auth: &source.Auth{Username: "fleet-bot", Password: "pa55-w0rd"}, Out: &out}
	_, err = Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred(), out.String())

	// A team's workload next to gitsync, and a ConfigMap kept in gitsync's namespace.
	ns := env.Namespace(t)
	head := repo.Commit("main", "web", map[string]string{
		"clusters/dev/apps/web.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: " + ns + "\ndata:\n  a: \"1\"\n",
		"clusters/dev/apps/info.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-info-" + ns + "\n  namespace: gitsync-system\n",
	})

	p := gitsyncproc.Start(t, gitsyncproc.Options{Binary: binary, Kubeconfig: kubeconfigPath, StoragePath: filepath.Join(dir, "storage"),
		Log: filepath.Join(dir, "gitsync.log"), Args: []string{"--default-service-account=gitsync-tenant"}})
	app := &gitsyncv1.Application{}
	g.Eventually(func() string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: Name}, app)).To(Succeed())
		return app.Status.LastAppliedRevision
	}).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Equal("main@sha1:"+head),
		func() string { return gitsyncproc.Tail(filepath.Join(dir, "gitsync.log"), 30) })
	web := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web)).To(Succeed())
	g.Expect(web.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, Name))
	manager := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: "gitsync"}, manager)).To(Succeed())
	g.Expect(manager.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, Name), "gitsync manages itself")

	// Bootstrap again while gitsync manages its own objects: nothing to do.
	out.Reset()
	res, err := Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.Unchanged()).To(BeTrue(), out.String())
	g.Expect(repo.Head("main")).To(Equal(head))

	// Uninstall while the operator still runs outside the cluster (where uninstall cannot
	// stop it, and it puts its finalizer back): the Applications are suspended first, so
	// its finalizer orphans instead of pruning.
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	out.Reset()
	s, err := uninstall.Run(ctx, env.Client, uninstall.Options{Discovery: dc, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	t.Log(out.String())
	g.Expect(s.Released).To(ContainElement("Application/gitsync-system/gitsync"))
	g.Expect(s.LeftInPlace).To(ContainElements("ConfigMap/"+ns+"/web", "ConfigMap/gitsync-system/cluster-info-"+ns))
	g.Expect(s.LeftInPlace).NotTo(ContainElement("Deployment/gitsync-system/gitsync"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
	g.Expect(web.DeletionTimestamp).To(BeNil())
	err = env.Client.Get(ctx, client.ObjectKey{Name: "applications.gitsync.dev"}, &apiextensionsv1.CustomResourceDefinition{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	err = env.Client.Get(ctx, client.ObjectKeyFromObject(manager), manager)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(out.String()).To(MatchRegexp(`keep Namespace/gitsync-system: it holds objects that gitsync managed \(ConfigMap/cluster-info-test-\w+\)`))
	exited, _ := p.Exited()
	g.Expect(exited).To(BeFalse(), "the operator ran throughout")
	p.Kill()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
	g.Expect(web.DeletionTimestamp).To(BeNil())
}
