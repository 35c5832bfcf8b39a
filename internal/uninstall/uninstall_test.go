package uninstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/install"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

var dc discovery.DiscoveryInterface

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, func() (func(), error) {
		var err error
		dc, err = discovery.NewDiscoveryClientForConfig(env.Config)
		return func() {}, err
	}))
}

const systemNS = "gitsync-system"

// world is gitsync installed, and one Application in its own namespace that (as the
// operator would have left it) carries the finalizer and lists in its inventory the
// objects it applied, which carry its owner labels.
type world struct {
	ns      string
	app     *gitsyncv1.Application
	managed []client.Object
}

func setUp(t *testing.T, g Gomega, inSystemNamespace bool, finalizers ...string) *world {
	t.Helper()
	ctx := context.Background()
	objs, err := install.Manifests("registry.example/gitsync:v0.0.1")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = install.Run(ctx, env.Client, objs, &bytes.Buffer{}, false)
	g.Expect(err).NotTo(HaveOccurred())

	w := &world{ns: env.Namespace(t)}
	owner := map[string]string{gitsyncv1.ApplicationLabel: "web", gitsyncv1.ApplicationNamespaceLabel: w.ns}
	labels := map[string]string{"app": "web"}
	w.managed = []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: w.ns, Labels: owner}, Data: map[string]string{"a": "1"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: w.ns, Labels: owner},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
				},
			},
		},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "web-reader-" + w.ns, Labels: owner}},
	}
	if inSystemNamespace {
		w.managed = append(w.managed, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fleet-" + w.ns, Namespace: systemNS, Labels: owner}})
	}
	var entries []gitsyncv1.InventoryEntry
	for _, obj := range w.managed {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		gvk, err := env.Client.GroupVersionKindFor(obj)
		g.Expect(err).NotTo(HaveOccurred())
		id := object.ObjMetadata{Namespace: obj.GetNamespace(), Name: obj.GetName(), GroupKind: gvk.GroupKind()}
		entries = append(entries, gitsyncv1.InventoryEntry{ID: id.String(), V: gvk.GroupVersion().String()})
	}
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: w.ns}, Spec: gitsyncv1.GitRepositorySpec{URL: "https://git.example/fleet.git"}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	w.app = &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: w.ns, Finalizers: append([]string{gitsyncv1.Finalizer}, finalizers...)},
		Spec:       gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "fleet"}, Prune: true},
	}
	g.Expect(env.Client.Create(ctx, w.app)).To(Succeed())
	w.app.Status.Inventory = &gitsyncv1.Inventory{Entries: entries}
	g.Expect(env.Client.Status().Update(ctx, w.app)).To(Succeed())
	return w
}

// expectManagedInPlace checks that every managed object still exists with its labels.
func (w *world) expectManagedInPlace(g Gomega) {
	for _, obj := range w.managed {
		live := obj.DeepCopyObject().(client.Object)
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed(), obj.GetName())
		g.Expect(live.GetDeletionTimestamp()).To(BeNil(), obj.GetName())
		g.Expect(live.GetLabels()).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "web"), obj.GetName())
	}
}

func gone(g Gomega, obj client.Object) {
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %v", obj.GetName(), err)
}

func exists(g Gomega, obj client.Object) {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed(), obj.GetName())
}

func crd(plural string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gitsyncv1.GroupVersion.Group}}
}

// --dry-run prints the plan and changes nothing.
func TestUninstallDryRunChangesNothing(t *testing.T) {
	g := NewWithT(t)
	w := setUp(t, g, false)
	var out bytes.Buffer
	s, err := Run(context.Background(), env.Client, Options{Discovery: dc, DryRun: true, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(out.String()).To(ContainSubstring("would suspend Application/" + w.ns + "/web\n"))
	g.Expect(out.String()).To(ContainSubstring("would release Application/" + w.ns + "/web (finalizers removed, nothing pruned)\n"))
	// The order that keeps the workloads: suspend, stop, release, then delete.
	g.Expect(out.String()).To(MatchRegexp(`(?s)would suspend .*would stop Deployment/gitsync-system/gitsync\n.*would release .*would delete CustomResourceDefinition`))
	g.Expect(out.String()).To(ContainSubstring("would delete CustomResourceDefinition/applications.gitsync.dev\n"))
	g.Expect(out.String()).To(ContainSubstring("✔ dry run, nothing changed"))
	g.Expect(s.LeftInPlace).To(ContainElements("ConfigMap/"+w.ns+"/settings", "Deployment/"+w.ns+"/web", "ClusterRole/web-reader-"+w.ns))

	exists(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gitsync", Namespace: systemNS}})
	exists(g, crd("applications"))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w.app), app)).To(Succeed())
	g.Expect(app.Finalizers).To(ContainElement(gitsyncv1.Finalizer))
	g.Expect(app.Spec.Suspend).To(BeFalse())
	w.expectManagedInPlace(g)
}

// A tenant's own workload labelled app.kubernetes.io/name=gitsync (a Deployment named
// gitsync in its namespace, running as its own account) is not gitsync's manager: the
// uninstall's plan stops only the Deployment that gitsync's ClusterRoleBinding's account
// runs.
func TestUninstallLeavesATenantsLookalike(t *testing.T) {
	g := NewWithT(t)
	w := setUp(t, g, false)
	labels := map[string]string{"app.kubernetes.io/name": "gitsync"}
	lookalike := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gitsync", Namespace: w.ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
	g.Expect(env.Client.Create(context.Background(), lookalike)).To(Succeed())
	var out bytes.Buffer
	s, err := Run(context.Background(), env.Client, Options{Discovery: dc, DryRun: true, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(s.Stopped).To(Equal([]string{"Deployment/gitsync-system/gitsync"}))
	g.Expect(out.String()).NotTo(ContainSubstring("Deployment/" + w.ns + "/gitsync"))
}

// The uninstall has a deadline: a manager Pod that never ends (held by a finalizer)
// makes it fail after Options.Timeout (gitsync uninstall --timeout), naming the flag,
// instead of waiting forever.
func TestUninstallHasADeadline(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	setUp(t, g, false)
	automount := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gitsync-held", Namespace: systemNS,
			Labels: map[string]string{"app.kubernetes.io/name": "gitsync"}, Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{ServiceAccountName: "gitsync", AutomountServiceAccountToken: &automount,
			Containers: []corev1.Container{{Name: "manager", Image: "registry.example/gitsync:v0.0.1"}}},
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	defer func() { // for the next tests: the Pod gone
		g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod))).To(Succeed())
		live := &corev1.Pod{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(pod), live) == nil {
			live.Finalizers = nil
			g.Expect(env.Client.Update(ctx, live)).To(Succeed())
		}
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		}).Should(BeTrue())
	}()
	_, err := Run(ctx, env.Client, Options{Discovery: dc, Timeout: 2 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("gitsync uninstall --timeout")))
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	// Nothing past the stop was done: the CRDs are still there.
	exists(g, crd("applications"))
}

// An uninstall stops the manager, releases the Application, deletes the CRDs (and with
// them every custom resource) and gitsync's RBAC, and leaves every managed object in
// place; gitsync's namespace stays while a managed object lives in it.
func TestUninstallKeepsWorkloads(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := setUp(t, g, true)
	// The Application is being deleted already: with the operator running its
	// finalizer would prune; uninstall releases it instead.
	g.Expect(env.Client.Delete(ctx, w.app)).To(Succeed())

	var out bytes.Buffer
	s, err := Run(ctx, env.Client, Options{Discovery: dc, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	t.Log(out.String())
	g.Expect(s.Stopped).To(Equal([]string{"Deployment/gitsync-system/gitsync"}))
	g.Expect(s.Released).To(ContainElement("Application/" + w.ns + "/web"))
	g.Expect(s.Suspended).To(ContainElement("Application/" + w.ns + "/web"))
	g.Expect(s.LeftInPlace).To(ContainElements("ConfigMap/"+w.ns+"/settings", "Deployment/"+w.ns+"/web",
		"ClusterRole/web-reader-"+w.ns, "ConfigMap/gitsync-system/fleet-"+w.ns))
	crds, err := config.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	// Deleted: every CRD and the install's 6 other cluster-level objects.
	g.Expect(out.String()).To(MatchRegexp(`✔ gitsync uninstalled: 1 manager workloads stopped, (\d+) of \d+ Applications released, \d+ managed objects left in place, ` + fmt.Sprint(len(crds)+6) + ` gitsync objects deleted, 1 kept\n$`))
	g.Expect(out.String()).To(ContainSubstring("keep Namespace/gitsync-system: it holds objects that gitsync managed (ConfigMap/fleet-" + w.ns + ")\n"))

	w.expectManagedInPlace(g)
	for _, plural := range []string{"applications", "gitrepositories", "helmrepositories", "providers", "alerts"} {
		gone(g, crd(plural))
	}
	gone(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gitsync", Namespace: systemNS}})
	gone(g, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager"}})
	gone(g, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager"}})
	gone(g, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager-tenant-mode"}})
	gone(g, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager-tenant-mode"}})
	gone(g, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gitsync", Namespace: systemNS}})
	gone(g, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-webhook", Namespace: systemNS}})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}
	exists(g, ns)
	g.Expect(ns.DeletionTimestamp).To(BeNil())

	// Again: nothing left to do.
	out.Reset()
	s, err = Run(ctx, env.Client, Options{Discovery: dc, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(s.Stopped).To(BeEmpty())
	g.Expect(s.Released).To(BeEmpty())
	g.Expect(s.Deleted).To(BeEmpty())
	g.Expect(s.Kept).To(HaveLen(1))
	exists(g, ns)
	g.Expect(ns.DeletionTimestamp).To(BeNil())
	w.expectManagedInPlace(g)

	// For the next test: gitsync's namespace without a managed object.
	g.Expect(env.Client.Delete(ctx, w.managed[len(w.managed)-1])).To(Succeed())
}

// --keep-crds keeps the CRDs and the custom resources, released; the rest goes.
func TestUninstallKeepCRDs(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := setUp(t, g, false, "example.com/keep")
	var out bytes.Buffer
	s, err := Run(ctx, env.Client, Options{Discovery: dc, KeepCRDs: true, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(out.String()).To(ContainSubstring("keep CustomResourceDefinition/applications.gitsync.dev: --keep-crds\n"))
	g.Expect(out.String()).To(ContainSubstring("resume Application/" + w.ns + "/web (as it was)\n"))
	g.Expect(s.Deleted).NotTo(ContainElement(ContainSubstring("CustomResourceDefinition")))
	w.expectManagedInPlace(g)
	exists(g, crd("applications"))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w.app), app)).To(Succeed())
	g.Expect(app.Finalizers).To(Equal([]string{"example.com/keep"}))
	g.Expect(app.Spec.Suspend).To(BeFalse(), "kept for a later install as it was")
	gone(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gitsync", Namespace: systemNS}})
	gone(g, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-manager"}})
	// No managed object in it: the namespace is deleted (envtest has no namespace
	// controller to finish that, so it stays Terminating).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}
	exists(g, ns)
	g.Expect(ns.DeletionTimestamp).NotTo(BeNil())
}
