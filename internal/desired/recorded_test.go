package desired

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
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
	if len(rec.refs) != 4 {
		t.Fatalf("recorded %d objects, want 4", len(rec.refs))
	}
	// Each kind is held once, and the references read back in inventory ID order.
	if len(rec.kinds) != 3 {
		t.Errorf("recorded kinds %v, want ConfigMap, Deployment and Namespace once each", rec.kinds)
	}
	var ids []string
	for _, ref := range rec.objectRefs() {
		ids = append(ids, ref.ID())
	}
	if want := []string{"_a__Namespace", "a_x__ConfigMap", "a_x_apps_Deployment", "b_x__ConfigMap"}; !slices.Equal(ids, want) {
		t.Errorf("references %v, want %v", ids, want)
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
		i, ok := rec.find(c.ref)
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
		o, err := rec.reader().object(i)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(o.Object, "data", "v"); got != c.want {
			t.Errorf("%s: data.v = %q, want %q", c.ref.ID(), got, c.want)
		}
	}
}

// An Application's objects span several chunks, each read back whole; alike objects
// are held in a fraction of their JSON's size.
func TestRecordChunks(t *testing.T) {
	var objs []*unstructured.Unstructured
	plain := 0
	for i := range 3*chunkObjects + 5 {
		o := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"value": fmt.Sprint(i)}}}
		o.SetAPIVersion("v1")
		o.SetKind("ConfigMap")
		o.SetNamespace("team-a")
		o.SetName(fmt.Sprintf("app-cm-%04d", i))
		o.SetLabels(map[string]string{"gitsync.dev/application": "app", "gitsync.dev/application-namespace": "team-a"})
		raw, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		plain += len(raw)
		objs = append(objs, o)
	}
	rec, err := record(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.chunks) != 4 {
		t.Errorf("%d chunks, want 4", len(rec.chunks))
	}
	held := 0
	for _, c := range rec.chunks {
		held += cap(c) // what the chunk keeps alive, not only what it uses
	}
	if held*3 > plain {
		t.Errorf("%d bytes of JSON held in %d", plain, held)
	}
	rr := rec.reader()
	for _, o := range objs {
		i, ok := rec.find(drift.RefOf(o))
		if !ok {
			t.Fatalf("%s not found", o.GetName())
		}
		got, err := rr.object(i)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Object, o.Object) {
			t.Errorf("read back %v, want %v", got.Object, o.Object)
		}
	}
	// One reference is held per managed object.
	if size := unsafe.Sizeof(recordedRef{}); size > 48 {
		t.Errorf("a recorded reference takes %d bytes, want 48 at most", size)
	}
}
