package apply

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkApplyChangedObject: the apply step of a push that changes one object of the
// last sync (a ConfigMap's value): the object's dry-run, its read, and its apply. One
// op is one Apply, from the set to the new value written.
//
//	go test -run '^$' -bench ApplyChangedObject -count 6 ./internal/apply/
func BenchmarkApplyChangedObject(b *testing.B) {
	ctx := context.Background()
	ns := env.Namespace(b)
	m := New(env.Client, env.Client, Owner{Name: "app", Namespace: ns})
	cm := func(v int) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "pushed", "namespace": ns},
			"data":     map[string]any{"value": fmt.Sprint(v)},
		}}}
	}
	res, err := m.Apply(ctx, cm(0), Options{})
	if err != nil {
		b.Fatal(err)
	}
	previous := res.Inventory
	b.ResetTimer()
	for i := range b.N {
		res, err := m.Apply(ctx, cm(i+1), Options{Previous: previous})
		if err != nil {
			b.Fatal(err)
		}
		if n := res.Count("configured"); n != 1 {
			b.Fatalf("apply %d: %d configured, want 1", i+1, n)
		}
	}
}
