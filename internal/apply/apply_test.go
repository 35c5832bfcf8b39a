package apply

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestApplyCreatesThenLeavesUnchangedObjectsAlone(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	owner := Owner{Name: "app", Namespace: ns}
	m := newManager(owner)

	objs := make([]*unstructured.Unstructured, 10)
	for i := range objs {
		objs[i] = configMap(t, ns, fmt.Sprintf("cm-%d", i), "v1")
	}

	res, err := m.Apply(ctx, objs, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(10))
	g.Expect(res.Inventory).To(HaveLen(10))
	g.Expect(res.Inventory).To(ContainElement(Entry{ID: ns + "_cm-0__ConfigMap", Version: "v1"}))
	g.Expect(res.Changes[0].Subject).To(Equal("ConfigMap/" + ns + "/cm-0"))
	g.Expect(objs[0].GetLabels()).To(BeEmpty(), "Apply must not modify its arguments")

	rv := map[string]string{}
	for _, o := range objs {
		got := current(t, o)
		g.Expect(got.GetLabels()).To(Equal(map[string]string{
			gitsyncv1.ApplicationLabel:          "app",
			gitsyncv1.ApplicationNamespaceLabel: ns,
		}))
		rv[o.GetName()] = got.GetResourceVersion()
	}

	// The same set again: nothing is written.
	res, err = m.Apply(ctx, objs, Options{Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("unchanged")).To(Equal(10))
	for _, o := range objs {
		g.Expect(current(t, o).GetResourceVersion()).To(Equal(rv[o.GetName()]), o.GetName())
	}

	// One object changes: only it is written.
	objs[3] = configMap(t, ns, "cm-3", "v2")
	res, err = m.Apply(ctx, objs, Options{Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("configured")).To(Equal(1))
	g.Expect(res.Count("unchanged")).To(Equal(9))
	for _, c := range res.Changes {
		if c.Action == "configured" {
			g.Expect(c.Subject).To(Equal("ConfigMap/" + ns + "/cm-3"))
		}
	}
	for _, o := range objs {
		got := current(t, o)
		if o.GetName() == "cm-3" {
			g.Expect(got.GetResourceVersion()).NotTo(Equal(rv["cm-3"]))
			g.Expect(got.Object["data"]).To(Equal(map[string]any{"key": "v2"}))
			continue
		}
		g.Expect(got.GetResourceVersion()).To(Equal(rv[o.GetName()]), o.GetName())
	}
}

func TestApplyInvalidObjectAppliesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	invalid := deployment(t, ns, "web")
	unstructured.RemoveNestedField(invalid.Object, "spec", "selector")
	objs := []*unstructured.Unstructured{
		configMap(t, ns, "a", "1"),
		configMap(t, ns, "b", "1"),
		invalid,
		configMap(t, ns, "c", "1"),
		deployment(t, ns, "api"),
	}

	res, err := m.Apply(context.Background(), objs, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(res).To(BeNil())
	g.Expect(err.Error()).To(ContainSubstring("Deployment/" + ns + "/web"))
	g.Expect(err.Error()).NotTo(ContainSubstring("Deployment/" + ns + "/api"))
	var dryRun *DryRunError
	g.Expect(errors.As(err, &dryRun)).To(BeTrue())
	g.Expect(dryRun.Objects).To(HaveLen(1))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue())
	for _, o := range objs {
		g.Expect(exists(t, o)).To(BeFalse(), o.GetName())
	}
}

func TestApplyNamesEveryFailingObject(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	badDeployment := deployment(t, ns, "web")
	unstructured.RemoveNestedField(badDeployment.Object, "spec", "template", "spec", "containers")
	objs := []*unstructured.Unstructured{
		configMap(t, ns, "good", "1"),
		configMap(t, ns, "Bad.Name", "1"),
		badDeployment,
	}

	_, err := m.Apply(context.Background(), objs, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/Bad.Name"))
	g.Expect(err.Error()).To(ContainSubstring("Deployment/" + ns + "/web"))
	g.Expect(exists(t, objs[0])).To(BeFalse())
}

// A field the schema does not declare (a typo in Git) fails the dry-run, named, for a
// new object and for one that exists, and nothing is written: the dry-run asks for no
// strict field validation, and the server-side apply refuses such fields all the same.
func TestApplyUnknownFieldAppliesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	existing := configMap(t, ns, "existing", "1")
	_, err := m.Apply(context.Background(), []*unstructured.Unstructured{existing}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	typo := deployment(t, ns, "web")
	g.Expect(unstructured.SetNestedField(typo.Object, int64(2), "spec", "replicaz")).To(Succeed())
	changed := configMap(t, ns, "existing", "2")
	g.Expect(unstructured.SetNestedField(changed.Object, "x", "datum")).To(Succeed())
	_, err = m.Apply(context.Background(), []*unstructured.Unstructured{configMap(t, ns, "new", "1"), typo, changed}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(ContainSubstring("Deployment/"+ns+"/web"), ContainSubstring(".spec.replicaz: field not declared in schema")))
	g.Expect(err.Error()).To(And(ContainSubstring("ConfigMap/"+ns+"/existing"), ContainSubstring(".datum: field not declared in schema")))
	g.Expect(exists(t, typo)).To(BeFalse())
	g.Expect(exists(t, configMap(t, ns, "new", "1"))).To(BeFalse())
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(existing.GroupVersionKind())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(existing), live)).To(Succeed())
	g.Expect(live.Object["data"]).To(Equal(map[string]any{"key": "1"}))
}

// The same holds for a custom resource: a field its CRD's schema does not declare fails
// the dry-run, named, and nothing of the set is written (not pruned away in silence).
func TestApplyUnknownFieldOfCustomResourceAppliesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	def, group := crd(t)
	_, err := m.Apply(context.Background(), []*unstructured.Unstructured{def}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	typo := widget(t, group, ns, "w")
	g.Expect(unstructured.SetNestedField(typo.Object, int64(3), "spec", "sise")).To(Succeed())
	cm := configMap(t, ns, "cfg", "1")
	_, err = m.Apply(context.Background(), []*unstructured.Unstructured{def, cm, typo}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(ContainSubstring("Widget/"+ns+"/w"), ContainSubstring(".spec.sise: field not declared in schema")))
	g.Expect(exists(t, typo)).To(BeFalse())
	g.Expect(exists(t, cm)).To(BeFalse())
}

func TestApplyCRDAndCustomResourceTogether(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	def, group := crd(t)
	cr := parse(t, `
apiVersion: %s/v1
kind: Widget
metadata: {name: w, namespace: %s}
spec: {size: 3}
`, group, ns)
	res, err := m.Apply(context.Background(), []*unstructured.Unstructured{cr, def}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(2))
	g.Expect(res.Inventory).To(Equal([]Entry{
		{ID: "_widgets." + group + "_apiextensions.k8s.io_CustomResourceDefinition", Version: "apiextensions.k8s.io/v1"},
		{ID: ns + "_w_" + group + "_Widget", Version: group + "/v1"},
	}))
	g.Expect(current(t, cr).Object["spec"]).To(Equal(map[string]any{"size": int64(3)}))
}

func TestApplyInvalidCustomResourceOfNewCRD(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	def, group := crd(t)
	cr := parse(t, `
apiVersion: %s/v1
kind: Widget
metadata: {name: w, namespace: %s}
spec: {size: big}
`, group, ns)
	cm := configMap(t, ns, "cfg", "1")
	res, err := m.Apply(context.Background(), []*unstructured.Unstructured{cm, cr, def}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("Widget/" + ns + "/w"))
	// Documented: the CRD (first stage) had to be applied before the CR could be dry-run;
	// nothing after it was.
	g.Expect(res.Count("created")).To(Equal(1))
	g.Expect(exists(t, def)).To(BeTrue())
	g.Expect(exists(t, cr)).To(BeFalse())
	g.Expect(exists(t, cm)).To(BeFalse())
}

func TestApplyNamespaceAndObjectsInIt(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	owner := Owner{Name: "app", Namespace: env.Namespace(t)}
	m := newManager(owner)

	ns := "new-" + rand.String(8)
	nsObj := parse(t, "{apiVersion: v1, kind: Namespace, metadata: {name: %s}}", ns)
	objs := []*unstructured.Unstructured{configMap(t, ns, "cfg", "1"), deployment(t, ns, "web"), nsObj}
	res, err := m.Apply(context.Background(), objs, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(3))
	g.Expect(res.Inventory[0]).To(Equal(Entry{ID: "_" + ns + "__Namespace", Version: "v1"}))
	for _, o := range objs {
		g.Expect(current(t, o).GetLabels()).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "app"))
	}
}

func TestApplyImmutableField(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	immutable := func(value string) *unstructured.Unstructured {
		cm := configMap(t, ns, "frozen", value)
		cm.Object["immutable"] = true
		return cm
	}
	res, err := m.Apply(ctx, []*unstructured.Unstructured{immutable("1")}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	uid := current(t, immutable("1")).GetUID()

	other := configMap(t, ns, "other", "1")
	_, err = m.Apply(ctx, []*unstructured.Unstructured{immutable("2"), other}, Options{Previous: res.Inventory})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/frozen: field is immutable"))
	g.Expect(err.Error()).To(ContainSubstring("`force: true` recreates the object"))
	var dryRun *DryRunError
	g.Expect(errors.As(err, &dryRun)).To(BeTrue())
	g.Expect(dryRun.Objects[0].Immutable).To(BeTrue())
	g.Expect(current(t, immutable("1")).Object["data"]).To(Equal(map[string]any{"key": "1"}))
	g.Expect(exists(t, other)).To(BeFalse())

	// The same without the last inventory (lost, or another sync's object): the first,
	// metadata-only dry-run already fails, with the same error.
	_, err = m.Apply(ctx, []*unstructured.Unstructured{immutable("2"), other}, Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/frozen: field is immutable"))
	g.Expect(errors.As(err, &dryRun)).To(BeTrue())
	g.Expect(dryRun.Objects[0].Immutable).To(BeTrue())
	g.Expect(exists(t, other)).To(BeFalse())

	res, err = m.Apply(ctx, []*unstructured.Unstructured{immutable("2"), other}, Options{Force: true, Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(2))
	got := current(t, immutable("2"))
	g.Expect(got.GetUID()).NotTo(Equal(uid))
	g.Expect(got.Object["data"]).To(Equal(map[string]any{"key": "2"}))
}

func TestApplyConflictWithAnotherApplication(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := Owner{Name: "a", Namespace: ns}
	_, err := newManager(a).Apply(ctx, []*unstructured.Unstructured{configMap(t, ns, "cfg", "a")}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	b := Owner{Name: "b", Namespace: "elsewhere"}
	objs := []*unstructured.Unstructured{configMap(t, ns, "mine", "b"), configMap(t, ns, "cfg", "b")}
	res, err := newManager(b).Apply(ctx, objs, Options{})
	g.Expect(res).To(BeNil())
	var conflict *ConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "error: %v", err)
	g.Expect(conflict.Owner).To(Equal(a))
	g.Expect(conflict.Subject).To(Equal("ConfigMap/" + ns + "/cfg"))
	g.Expect(err.Error()).To(Equal(fmt.Sprintf("ConfigMap/%s/cfg is managed by Application %s/a", ns, ns)))

	got := current(t, objs[1])
	g.Expect(got.GetLabels()).To(Equal(a.Labels()))
	g.Expect(got.Object["data"]).To(Equal(map[string]any{"key": "a"}))
	g.Expect(exists(t, objs[0])).To(BeFalse())
}

// Five new objects of one kind in one namespace are checked with one LIST: a conflict
// among them is found all the same.
func TestApplyConflictDetectedInABatch(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a := Owner{Name: "a", Namespace: ns}
	_, err := newManager(a).Apply(ctx, []*unstructured.Unstructured{configMap(t, ns, "c3", "a")}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	var objs []*unstructured.Unstructured
	for i := range 5 {
		objs = append(objs, configMap(t, ns, fmt.Sprintf("c%d", i), "b"))
	}
	_, err = newManager(Owner{Name: "b", Namespace: ns}).Apply(ctx, objs, Options{})
	var conflict *ConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "error: %v", err)
	g.Expect(conflict.Subject).To(Equal("ConfigMap/" + ns + "/c3"))
	g.Expect(conflict.Owner).To(Equal(a))
	g.Expect(exists(t, objs[0])).To(BeFalse())
}

func TestApplyImpersonatedWithoutRights(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":nobody"}
	impersonating, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	m := New(impersonating, env.Client, Owner{Name: "app", Namespace: ns})
	objs := []*unstructured.Unstructured{configMap(t, ns, "a", "1"), configMap(t, ns, "b", "1")}

	t.Run("no rights at all", func(t *testing.T) {
		g := NewWithT(t)
		_, err := m.Apply(context.Background(), objs, Options{})
		g.Expect(err).To(HaveOccurred())
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "error: %v", err)
		for _, o := range objs {
			g.Expect(exists(t, o)).To(BeFalse())
		}
	})

	t.Run("read but not write", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		g.Expect(env.Client.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
		})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nobody", Namespace: ns}},
		})).To(Succeed())

		var err error
		g.Eventually(func() bool { // RBAC changes reach the authorizer through a watch
			_, err = m.Apply(ctx, objs, Options{})
			var dryRun *DryRunError
			return errors.As(err, &dryRun)
		}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "error: %v", err)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "error: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/a"))
		g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/b"))
		for _, o := range objs {
			g.Expect(exists(t, o)).To(BeFalse())
		}
	})
}
