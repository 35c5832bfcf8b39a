package desired

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitsync-dev/gitsync/internal/drift"
)

// A recorded state finds each object by its inventory ID (the version aside) and keeps
// the last of objects with the same ID, as a map by ID did.
func TestRecordFindsByInventoryID(t *testing.T) {
	obj := func(apiVersion, kind, ns, name, value string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"v": value}}}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	rec, err := record([]*unstructured.Unstructured{
		obj("v1", "ConfigMap", "b", "x", "1"),
		obj("apps/v1", "Deployment", "a", "x", "2"),
		obj("v1", "ConfigMap", "a", "x", "3"),
		obj("v1", "ConfigMap", "b", "x", "4"), // the same ID as the first: it wins
		obj("v1", "Namespace", "", "a", "5"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != 4 {
		t.Fatalf("recorded %d objects, want 4", len(rec))
	}
	for _, c := range []struct {
		ref  drift.ObjectRef
		want string
	}{
		{drift.ObjectRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "b", Name: "x"}, "4"},
		{drift.ObjectRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "a", Name: "x"}, "3"},
		{drift.ObjectRef{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, Namespace: "a", Name: "x"}, "2"},
		{drift.ObjectRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "a"}, "5"},
		{drift.ObjectRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: "a", Name: "x"}, ""},
	} {
		d, ok := rec.find(c.ref)
		if !ok {
			if c.want != "" {
				t.Errorf("%s: not found", c.ref.ID())
			}
			continue
		}
		if c.want == "" {
			t.Errorf("%s: found, want none", c.ref.ID())
			continue
		}
		o, err := d.object()
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(o.Object, "data", "v"); got != c.want {
			t.Errorf("%s: data.v = %q, want %q", c.ref.ID(), got, c.want)
		}
	}
}
