package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
)

// What a set of ConfigMaps costs the API server: a cold apply is one dry-run and one
// apply per object (and one metadata LIST for the owner check), no read; a re-apply of
// an unchanged set reads and dry-runs each object and writes nothing; objects that
// Options.Unchanged vouches for are not sent at all.
func TestApplyRequestsPerObject(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cfg, patches := recordPatches(env.Config)
	counter, c, err := apicount.NewClient(cfg, env.Scheme)
	g.Expect(err).NotTo(HaveOccurred())
	m := New(c, c, Owner{Name: "app", Namespace: ns})
	_, err = c.RESTMapper().RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1") // discovery, once
	g.Expect(err).NotTo(HaveOccurred())

	objs := make([]*unstructured.Unstructured, 10)
	for i := range objs {
		objs[i] = configMap(t, ns, fmt.Sprintf("cm-%d", i), "v1")
	}
	before := counter.Snapshot()
	res, err := m.Apply(ctx, objs, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(10))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"list": 1, "dry-run-patch": 10, "patch": 10}))
	// The dry-runs ask for no strict field validation (the schema check of server-side
	// apply stays: TestApplyUnknownFieldAppliesNothing); for new objects they read back
	// only metadata (it tells that the object is new). The applies read back only
	// metadata too.
	g.Expect(patches()).To(Equal(map[string]int{
		"dry-run-patch fieldValidation=Ignore metadata-only=true": 10,
		"patch fieldValidation=Ignore metadata-only=true":         10,
	}))

	before = counter.Snapshot()
	res, err = m.Apply(ctx, objs, Options{Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("unchanged")).To(Equal(10))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"dry-run-patch": 10, "get": 10}))
	// Objects of the last inventory are dry-run in full: the result is compared with
	// the live object.
	g.Expect(patches()).To(HaveKeyWithValue("dry-run-patch fieldValidation=Ignore metadata-only=false", 10))

	objs[3] = configMap(t, ns, "cm-3", "v2")
	before = counter.Snapshot()
	res, err = m.Apply(ctx, objs, Options{Previous: res.Inventory, Unchanged: func(o *unstructured.Unstructured) bool {
		return o.GetName() != "cm-3"
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("configured")).To(Equal(1))
	g.Expect(res.Count("unchanged")).To(Equal(9))
	g.Expect(res.Inventory).To(HaveLen(10))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"dry-run-patch": 1, "get": 1, "patch": 1}))
	g.Expect(current(t, objs[3]).Object["data"]).To(Equal(map[string]any{"key": "v2"}))

	// An object that exists though the last sync did not apply it (here made by someone
	// else, unlabelled) is dry-run again in full after the metadata-only dry-run, read,
	// compared and adopted.
	other := configMap(t, ns, "made-elsewhere", "v1")
	g.Expect(c.Create(ctx, other.DeepCopy())).To(Succeed())
	before, sent := counter.Snapshot(), patches()
	res, err = m.Apply(ctx, append(objs, other), Options{Previous: res.Inventory, Unchanged: func(o *unstructured.Unstructured) bool {
		return o.GetName() != "made-elsewhere"
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("configured")).To(Equal(1))                                                      // the owner labels are added
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"get": 2, "dry-run-patch": 2, "patch": 1})) // get: the owner check, then the read to compare
	g.Expect(since(patches(), sent)).To(Equal(map[string]int{
		"dry-run-patch fieldValidation=Ignore metadata-only=true":  1,
		"dry-run-patch fieldValidation=Ignore metadata-only=false": 1,
		"patch fieldValidation=Ignore metadata-only=true":          1,
	}))
	_, owned := OwnerOf(current(t, other).GetLabels())
	g.Expect(owned).To(BeTrue())

	// A drift correction is not preceded by a dry-run: it keeps the server's
	// validation, and reads back only metadata.
	sent = patches()
	g.Expect(m.Correct(ctx, configMap(t, ns, "cm-0", "v1"))).To(Succeed())
	g.Expect(since(patches(), sent)).To(Equal(map[string]int{"patch fieldValidation= metadata-only=true": 1}))
}

// since returns the counts of now that grew since before, by how much.
func since(now, before map[string]int) map[string]int {
	d := map[string]int{}
	for k, n := range now {
		if n > before[k] {
			d[k] = n - before[k]
		}
	}
	return d
}

// With an owner lookup that holds the kind (the drift watches), the owner check of new
// objects sends nothing: a cold apply is one dry-run and one apply per object. An object
// the cache labels for another Application is read once (through the Manager's own
// client) to confirm it, and the conflict is reported as before; one the cache does not
// know yet is caught on the live read of the existing object.
func TestApplyOwnerCheckFromCache(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	counter, c, err := apicount.NewClient(env.Config, env.Scheme)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.RESTMapper().RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1") // discovery, once
	g.Expect(err).NotTo(HaveOccurred())
	x, y := Owner{Name: "x", Namespace: ns}, Owner{Name: "y", Namespace: ns}

	// The cache: what x applied (read back from the API server, as a watch would see it).
	labelled := map[string]Owner{}
	lookup := func(gvk schema.GroupVersionKind, namespace, name string) (Owner, bool, bool) {
		g.Expect(gvk.Kind).To(Equal("ConfigMap"))
		o, ok := labelled[namespace+"/"+name]
		return o, ok, true
	}
	objs := make([]*unstructured.Unstructured, 6)
	for i := range objs {
		objs[i] = configMap(t, ns, fmt.Sprintf("cm-%d", i), "x")
	}
	before := counter.Snapshot()
	res, err := New(c, c, x).Apply(ctx, objs, Options{Owners: lookup})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("created")).To(Equal(6))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"dry-run-patch": 6, "patch": 6}))
	for _, o := range objs {
		labelled[ns+"/"+o.GetName()] = ownerLabels(t, current(t, o))
	}

	// y renders cm-0 too (and a new cm-y): the cache names x, one GET confirms it.
	before = counter.Snapshot()
	_, err = New(c, c, y).Apply(ctx, []*unstructured.Unstructured{configMap(t, ns, "cm-0", "y"), configMap(t, ns, "cm-y", "y")},
		Options{Owners: lookup})
	var conflict *ConflictError
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "error: %v", err)
	g.Expect(conflict.Owner).To(Equal(x))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"get": 1}))
	g.Expect(current(t, objs[0]).Object["data"]).To(Equal(map[string]any{"key": "x"}))

	// A cache that lags (it does not know x's cm-1 yet): the live read the apply makes
	// of an existing object finds x's labels, and nothing is written. (cm-1 is dry-run
	// twice: the metadata-only dry-run of an object y never applied shows that it exists.)
	delete(labelled, ns+"/cm-1")
	before = counter.Snapshot()
	_, err = New(c, c, y).Apply(ctx, []*unstructured.Unstructured{configMap(t, ns, "cm-1", "y"), configMap(t, ns, "cm-y", "y")},
		Options{Owners: lookup})
	g.Expect(errors.As(err, &conflict)).To(BeTrue(), "error: %v", err)
	g.Expect(conflict.Owner).To(Equal(x))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"dry-run-patch": 3, "get": 1}))
	g.Expect(current(t, objs[1]).Object["data"]).To(Equal(map[string]any{"key": "x"}))
	g.Expect(exists(t, configMap(t, ns, "cm-y", "y"))).To(BeFalse())

	// A stale cache entry (x let go of the object since: its labels are gone) is no
	// conflict: the GET shows the object as it is.
	labelled[ns+"/cm-z"] = x
	_, err = New(c, c, y).Apply(ctx, []*unstructured.Unstructured{configMap(t, ns, "cm-z", "y")}, Options{Owners: lookup})
	g.Expect(err).NotTo(HaveOccurred())
}

func ownerLabels(t *testing.T, obj *unstructured.Unstructured) Owner {
	t.Helper()
	o, ok := OwnerOf(obj.GetLabels())
	if !ok {
		t.Fatalf("%s has no owner labels", obj.GetName())
	}
	return o
}

// recordPatches returns a copy of base whose clients record, for each PATCH, its
// fieldValidation parameter and whether it asks for metadata only in return, and a func
// that returns the counts so far.
func recordPatches(base *rest.Config) (*rest.Config, func() map[string]int) {
	var mu sync.Mutex
	seen := map[string]int{}
	cfg := rest.CopyConfig(base)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch {
				metadataOnly := strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")
				mu.Lock()
				seen[fmt.Sprintf("%s fieldValidation=%s metadata-only=%t", apicount.Verb(req),
					req.URL.Query().Get("fieldValidation"), metadataOnly)]++
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
