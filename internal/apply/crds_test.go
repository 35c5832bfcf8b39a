package apply

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
)

// widget returns a Widget of the group of a crd() in ns.
func widget(t *testing.T, group, ns, name string) *unstructured.Unstructured {
	return parse(t, `
apiVersion: %s/v1
kind: Widget
metadata: {name: %s, namespace: %s}
spec: {size: 3}
`, group, name, ns)
}

// A RESTMapper that caches discovery (as kubectl's does) still maps the kinds of the
// set's CRDs before their custom resources are dry-run and applied: it is reset until
// the new kinds are served.
func TestApplyCRDAndCustomResourceWithCachedDiscovery(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Mapper: mapper})
	g.Expect(err).NotTo(HaveOccurred())
	m := New(c, c, Owner{Name: "app", Namespace: ns})

	def, group := crd(t)
	cr := widget(t, group, ns, "w")
	res, err := m.Apply(context.Background(), []*unstructured.Unstructured{cr, def}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(2))
	g.Expect(current(t, cr).Object["spec"]).To(Equal(map[string]any{"size": int64(3)}))
}

// Several sets of new CRDs with their custom resources, each applied through a client
// with a fresh mapper (as after a restart), concurrently: every one applies at once.
func TestApplyManyCRDsAndCustomResourcesWithFreshMappers(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				errs[i] = err
				return
			}
			var objs []*unstructured.Unstructured
			for j := range 3 {
				def, group := crd(t)
				objs = append(objs, def, widget(t, group, ns, fmt.Sprintf("w-%d-%d", i, j)))
			}
			res, err := New(c, c, Owner{Name: fmt.Sprintf("app-%d", i), Namespace: ns}).Apply(context.Background(), objs, Options{})
			if err == nil && res.Count("created") != 6 {
				err = fmt.Errorf("created %d objects, want 6", res.Count("created"))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	g := NewWithT(t)
	for i, err := range errs {
		g.Expect(err).NotTo(HaveOccurred(), "set %d", i)
	}
}

// A CRD whose conversion webhook's caBundle in Git is not a certificate bundle is
// applied without it, and so are its comparison (drift, diff) and its correction: the
// API server refuses such a caBundle on an Established CRD that had none, so a request
// that kept it would fail where the apply succeeded.
func TestInvalidCABundleLeftOutOfApplyCompareAndCorrect(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	def, _ := crd(t)
	g.Expect(unstructured.SetNestedMap(def.Object, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{
				"url":      "https://127.0.0.1:1/convert",
				"caBundle": "bm90IGEgY2VydGlmaWNhdGU=", // "not a certificate"
			},
		},
	}, "spec", "conversion")).To(Succeed())

	_, err := m.Apply(context.Background(), []*unstructured.Unstructured{def}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	live := current(t, def)
	_, found, _ := unstructured.NestedString(live.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	g.Expect(found).To(BeFalse(), "the invalid caBundle was applied")
	g.Eventually(func() (bool, error) { return m.established(context.Background(), def.GetName()) }).Should(BeTrue())

	_, desired, err := m.Compare(context.Background(), def)
	g.Expect(err).NotTo(HaveOccurred())
	_, found, _ = unstructured.NestedString(desired.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	g.Expect(found).To(BeFalse())
	g.Expect(m.Correct(context.Background(), def)).To(Succeed())
	_, found, _ = unstructured.NestedString(def.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	g.Expect(found).To(BeTrue(), "the caller's object lost its caBundle")
}

// A reader that can watch awaits a new CRD's establishment with one watch of it (a
// reader that cannot reads the CRD again until it is: TestApplyCRDAndCustomResource...).
func TestApplyAwaitsANewCRDWithAWatch(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	cfg := rest.CopyConfig(env.Config)
	counter := apicount.New()
	counter.Wrap(cfg)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	m := New(c, c, Owner{Name: "app", Namespace: ns})

	def, group := crd(t)
	cr := widget(t, group, ns, "w")
	before := counter.DetailSnapshot()
	res, err := m.Apply(context.Background(), []*unstructured.Unstructured{cr, def}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(2))
	requests := counter.DetailSince(before)
	g.Expect(requests).To(HaveKeyWithValue("watch customresourcedefinitions", 1), "requests: %v", requests)
	g.Expect(current(t, cr).Object["spec"]).To(Equal(map[string]any{"size": int64(3)}))
}

// A set of several stages (a new Namespace, a new CRD, objects in both) is dry-run whole
// before anything is written, and then applied: each object is dry-run once (the objects
// of the later stages after the definitions they need), not again before its apply.
func TestApplyOfSeveralStagesDryRunsEachObjectOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := "stages-" + rand.String(6)
	cfg := rest.CopyConfig(env.Config)
	counter := apicount.New()
	counter.Wrap(cfg)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	m := New(c, c, Owner{Name: "app", Namespace: ns})

	def, group := crd(t)
	objs := []*unstructured.Unstructured{
		parse(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		def,
		widget(t, group, ns, "w"),
		parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: %s}\ndata: {k: v}\n", ns),
		parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: %s}\ndata: {k: v}\n", ns),
	}
	before := counter.DetailSnapshot()
	res, err := m.Apply(context.Background(), objs, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(5))
	requests := counter.DetailSince(before)
	g.Expect(requests).To(HaveKeyWithValue("dry-run-patch configmaps", 2), "requests: %v", requests)
	g.Expect(requests).To(HaveKeyWithValue("dry-run-patch widgets", 1), "requests: %v", requests)
	g.Expect(requests).To(HaveKeyWithValue("patch configmaps", 2), "requests: %v", requests)
	g.Expect(current(t, objs[3]).Object["data"]).To(Equal(map[string]any{"k": "v"}))
}
