package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdExists tells whether the CRD name exists (and is not being deleted).
func crdExists(g Gomega, name string) bool {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return crd.GetDeletionTimestamp() == nil
}

// A CRD that leaves Git while custom resources of it exist is not pruned: Ready=False,
// PruneRefused, naming it; with spec.pruneCRDs it is.
func TestPruneRefusesACRDWithCustomResources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	group := ns + ".guard.example.org"
	f, sha := newAppFixtureIn(t, ns, map[string]string{
		"crd.yaml": manifests.WidgetCRD(group),
		"cm.yaml":  configMapYAML("keep", "1"),
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)
	// A custom resource someone made by hand.
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
	widget.SetNamespace(ns)
	widget.SetName("handmade")
	g.Eventually(func() error { return env.Client.Create(ctx, widget) }).WithTimeout(waitTimeout).Should(Succeed())

	sha = f.repo.Commit("main", "drop the CRD", nil, "crd.yaml")
	msg := f.waitNotReady("app", gitsyncv1.PruneRefusedReason)
	g.Expect(msg).To(ContainSubstring("CustomResourceDefinition/widgets." + group))
	g.Expect(msg).To(ContainSubstring("Widget/" + ns + "/handmade"))
	g.Expect(crdExists(g, "widgets."+group)).To(BeTrue())
	app := f.get(g, "app")
	g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusOutOfSync))
	g.Expect(inventoryIDs(app)).To(ContainElement("_widgets." + group + "_apiextensions.k8s.io_CustomResourceDefinition"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.PruneCRDs = true })
	app = f.waitApplied("app", sha)
	g.Expect(inventoryIDs(app)).To(ConsistOf(ns + "_keep__ConfigMap"))
	g.Eventually(func(g Gomega) bool { return crdExists(g, "widgets."+group) }).WithTimeout(waitTimeout).Should(BeFalse())
}

// A CRD without custom resources is pruned as any object.
func TestPruneDeletesAnUnusedCRD(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	group := ns + ".unused.example.org"
	f, sha := newAppFixtureIn(t, ns, map[string]string{"crd.yaml": manifests.WidgetCRD(group), "cm.yaml": configMapYAML("keep", "1")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)
	sha = f.repo.Commit("main", "drop the CRD", nil, "crd.yaml")
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.History[0].Pruned).To(Equal(1))
	g.Eventually(func(g Gomega) bool { return crdExists(g, "widgets."+group) }).WithTimeout(waitTimeout).Should(BeFalse())
}

// A Namespace that left Git is deleted when it holds only the Application's objects,
// and orphaned with a Warning when it holds someone else's.
func TestPruneOrphansANamespaceWithOthersObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	nsYAML := func(name string) string { return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + "}\n" }
	shared, ours := ns+"-shared", ns+"-ours"
	f, sha := newAppFixtureIn(t, ns, map[string]string{
		"shared.yaml": nsYAML(shared),
		"ours.yaml":   nsYAML(ours),
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside, namespace: " + ours + "}\n",
		"keep.yaml":   configMapYAML("keep", "1"),
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: shared}})).To(Succeed())

	sha = f.repo.Commit("main", "drop both namespaces", nil, "shared.yaml", "ours.yaml", "cm.yaml")
	app := f.waitApplied("app", sha)
	g.Expect(inventoryIDs(app)).To(ConsistOf(ns + "_keep__ConfigMap"))
	live := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: shared}, live)).To(Succeed())
	g.Expect(live.DeletionTimestamp).To(BeNil(), "the shared Namespace is orphaned, not deleted")
	g.Eventually(func(g Gomega) bool {
		err := env.Client.Get(ctx, client.ObjectKey{Name: ours}, live)
		return apierrors.IsNotFound(err) || (err == nil && live.DeletionTimestamp != nil)
	}).WithTimeout(waitTimeout).Should(BeTrue(), "a Namespace holding only the Application's objects is deleted")
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, ns, "app") {
			if e.Reason == gitsyncv1.OrphanedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(waitTimeout).Should(ContainElement(And(ContainSubstring("Namespace/"+shared), ContainSubstring("ConfigMap/theirs"))))
}

// An Application whose objects are missing once its sync finished is not Ready: here a
// Service is deleted (self-heal off) while the PostSync hook runs.
func TestApplicationMissingObjectsAreNotReady(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{
		"svc.yaml":  "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n",
		"hook.yaml": jobYAML("name", "smoke", `gitsync.dev/hook: PostSync`),
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	job := f.waitHookJob("app", "smoke")
	g.Expect(env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}})).To(Succeed())
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, job.Name, true)).To(Succeed())

	msg := f.waitNotReady("app", gitsyncv1.ObjectsMissingReason)
	g.Expect(msg).To(ContainSubstring("Service/" + f.ns + "/web"))
	app := f.get(g, "app")
	g.Expect(app.Status.Sync.Status).NotTo(Equal(gitsyncv1.SyncStatusSynced))
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusMissing))
	// The retry applies the revision again.
	f.waitApplied("app", sha)
	g.Expect(f.exists(g, &corev1.Service{}, "web")).To(BeTrue())
}

// When a kind stops being served (its CRD deleted by hand), drift reports its objects
// once, without an error flood, other Applications sync without waiting for its watch,
// and the watch resumes once a sync serves the kind again.
func TestDriftOfAKindThatIsNoLongerServed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	group := ns + ".vanish.example.org"
	widgetYAML := "apiVersion: " + group + "/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n"
	f, sha := newAppFixtureIn(t, ns, map[string]string{
		"a/crd.yaml": manifests.WidgetCRD(group),
		"a/cr.yaml":  widgetYAML,
		"b/cm.yaml":  configMapYAML("b", "1"),
	})
	f.app("a", func(a *gitsyncv1.Application) { a.Spec.Path = "a"; a.Spec.SelfHeal = ptr.To(false) })
	f.waitApplied("a", sha)
	time.Sleep(time.Second) // a second reconcile of the new Application may still apply: let it end

	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName("widgets." + group)
	g.Expect(env.Client.Delete(ctx, crd)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return crdExists(g, "widgets."+group) }).WithTimeout(waitTimeout).Should(BeFalse())

	// The custom resource is reported as not served, once.
	g.Eventually(func(g Gomega) []string {
		var fields []string
		for _, d := range f.get(g, "a").Status.Drift {
			fields = append(fields, d.Object+" "+d.Fields[0])
		}
		return fields
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement("Widget/" + ns + "/w " + "(kind not served)"))
	// Another Application syncs without waiting for the vanished kind's watch.
	start := time.Now()
	f.app("b", func(a *gitsyncv1.Application) { a.Spec.Path = "b" })
	f.waitApplied("b", sha)
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "no wait for the watch of a kind that is not served")
	time.Sleep(time.Second)
	count := 0
	for _, e := range eventsFor(g, ns, "a") {
		if e.Reason == "KindNotServed" {
			count++
		}
	}
	g.Expect(count).To(Equal(1), "one event, not one per retry")

	// A sync serves it again; the watch resumes: a deleted custom resource is seen.
	f.edit(g, "a", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "again"}
	})
	g.Eventually(func(g Gomega) {
		app := f.get(g, "a")
		g.Expect(app.Status.LastHandledReconcileAt).To(Equal("again"))
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		g.Expect(app.Status.Drift).To(BeEmpty())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
	widget.SetNamespace(ns)
	widget.SetName("w")
	g.Expect(env.Client.Delete(ctx, widget)).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		var fields []string
		for _, d := range f.get(g, "a").Status.Drift {
			fields = append(fields, d.Object+" "+d.Fields[0])
		}
		return fields
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement("Widget/" + ns + "/w (deleted)"))
}
