package apply

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	counter := apicount.New()
	cfg := rest.CopyConfig(env.Config)
	counter.Wrap(cfg)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
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

	before = counter.Snapshot()
	res, err = m.Apply(ctx, objs, Options{Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("unchanged")).To(Equal(10))
	g.Expect(counter.Since(before)).To(Equal(map[string]int{"dry-run-patch": 10, "get": 10}))

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
}
