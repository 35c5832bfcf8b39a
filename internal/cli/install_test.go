package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// install --export | kubectl apply --dry-run=server -f - succeeds on the API server.
func TestInstallExportDryRun(t *testing.T) {
	g := NewWithT(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	r := gitsync(t, "install", "--export", "--image", "registry.example/gitsync:v9.9.9")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("kind: CustomResourceDefinition"))
	g.Expect(r.out).To(ContainSubstring("image: registry.example/gitsync:v9.9.9"))
	g.Expect(strings.Index(r.out, "kind: CustomResourceDefinition")).To(BeNumerically("<", strings.Index(r.out, "kind: Deployment")))

	// Objects in a Namespace cannot be dry-run before it exists: create it for real.
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-system"}}))).To(Succeed())
	// The CRDs exist already here, created by the test's API server setup (another field
	// manager), as over the CRDs of an earlier install.
	cmd := exec.Command(kubectl, "apply", "--dry-run=server", "--server-side", "--force-conflicts", "-f", "-", "--kubeconfig", kubeconfigPath)
	cmd.Stdin = strings.NewReader(r.out)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	g.Expect(cmd.Run()).To(Succeed(), out.String())
	g.Expect(out.String()).To(ContainSubstring("deployment.apps/gitsync serverside-applied (server dry run)"))
}

func TestInstallAndVersion(t *testing.T) {
	g := NewWithT(t)
	r := gitsync(t, "install", "--wait=false", "--image", "registry.example/gitsync:v1.2.3")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^(created|configured|unchanged) CustomResourceDefinition/applications.gitsync.dev$`))
	g.Expect(r.out).To(ContainSubstring("CRDs established"))
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "applications.gitsync.dev"}, crd)).To(Succeed())
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	g.Expect(strategy).To(Equal("None"), "the versions convert without a webhook")
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: "gitsync"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/gitsync:v1.2.3"))

	r = gitsync(t, "version")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`client: \S+\nkubernetes: v1\.\d+\.\d+.*\nserver: v1\.2\.3 \(gitsync-system\)\n`))

	var out syncBuffer
	root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, testTools)
	g.Expect(Execute(ctx, root, []string{"version", "--kubeconfig", "/nonexistent"})).To(Equal(0))
	g.Expect(out.String()).To(MatchRegexp(`client: \S+\nserver: unreachable`))
}

func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out syncBuffer
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, testTools)
		g.Expect(Execute(context.Background(), root, []string{"completion", shell})).To(Equal(0))
		g.Expect(out.String()).To(ContainSubstring("gitsync"), shell)
	}
	complete := func(args ...string) string {
		var out syncBuffer
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, testTools)
		g.Expect(Execute(context.Background(), root, append([]string{"__complete"}, args...))).To(Equal(0))
		return out.String()
	}
	// `get images` is a subcommand: cobra offers it before the kinds.
	g.Expect(complete("get", "")).To(HavePrefix("images\t"))
	g.Expect(complete("get", "")).To(ContainSubstring("\nsources\nhelmrepos\napps\n"))
	g.Expect(complete("get", "apps", "-n", f.ns, "--kubeconfig", kubeconfigPath, "w")).To(HavePrefix("web\n"))
	g.Expect(complete("diff", "app", "-n", f.ns, "--kubeconfig", kubeconfigPath, "")).To(HavePrefix("web\n"))
	g.Expect(complete("reconcile", "source", "-n", f.ns, "--kubeconfig", kubeconfigPath, "")).To(HavePrefix("app-repo\n"))
	// Flag values: namespaces, --for, --to (the app's history, newest first).
	g.Expect(complete("get", "apps", "--kubeconfig", kubeconfigPath, "-n", f.ns[:6])).To(ContainSubstring(f.ns + "\n"))
	g.Expect(complete("wait", "app", "web", "--for", "")).To(HavePrefix("synced\nhealthy\nready\n"))
	g.Expect(f.app.Status.History).NotTo(BeEmpty())
	g.Expect(complete("rollback", "app", "web", "-n", f.ns, "--kubeconfig", kubeconfigPath, "--to", "")).
		To(HavePrefix(f.app.Status.History[len(f.app.Status.History)-1].Revision + "\n"))
}

// gitsync install binds the least-privilege role by default; --least-privilege=false
// binds gitsync-manager; installing again with the default removes the gitsync-manager
// binding and role that the earlier install made, so that the write-anything role does
// not stay bound beside the narrow one.
func TestInstallLeastPrivilegeByDefault(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bound := func(name string) bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return err == nil
	}
	r := gitsync(t, "install", "--wait=false", "--least-privilege=false", "--image", "registry.example/gitsync:v1.2.3")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(bound("gitsync-manager")).To(BeTrue())

	r = gitsync(t, "install", "--wait=false", "--image", "registry.example/gitsync:v1.2.3")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("clusterrolebinding.rbac.authorization.k8s.io/gitsync-manager deleted\n"))
	g.Expect(r.out).To(ContainSubstring("clusterrole.rbac.authorization.k8s.io/gitsync-manager deleted\n"))
	g.Expect(bound("gitsync-manager")).To(BeFalse())
	g.Expect(bound("gitsync-manager-tenant-mode")).To(BeTrue())
	err := env.Client.Get(ctx, client.ObjectKey{Name: "gitsync-manager"}, &rbacv1.ClusterRole{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)

	// A role of the same name that someone else made is not gitsync install's to delete.
	mine := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager"}}
	g.Expect(env.Client.Create(ctx, mine)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, mine) })
	r = gitsync(t, "install", "--wait=false", "--image", "registry.example/gitsync:v1.2.3")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "gitsync-manager"}, &rbacv1.ClusterRole{})).To(Succeed())
}
