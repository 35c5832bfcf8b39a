package apply

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaled returns a Deployment with replicas and image, as Git has it.
func scaled(t *testing.T, ns string, replicas int, image string) *unstructured.Unstructured {
	d := deployment(t, ns, "web")
	_ = unstructured.SetNestedField(d.Object, int64(replicas), "spec", "replicas")
	_ = unstructured.SetNestedSlice(d.Object, []any{map[string]any{"name": "app", "image": image}}, "spec", "template", "spec", "containers")
	return d
}

// autoscale sets the Deployment's replicas as an autoscaler does: an update by
// another field manager.
func autoscale(t *testing.T, obj *unstructured.Unstructured, replicas int64) {
	t.Helper()
	live := current(t, obj)
	_ = unstructured.SetNestedField(live.Object, replicas, "spec", "replicas")
	if err := env.Client.Update(context.Background(), live, client.FieldOwner("hpa")); err != nil {
		t.Fatalf("scaling: %v", err)
	}
}

func replicasOf(t *testing.T, obj *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(current(t, obj).Object, "spec", "replicas")
	return n
}

func imageOf(t *testing.T, obj *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(current(t, obj).Object, "spec", "template", "spec", "containers")
	return containers[0].(map[string]any)["image"].(string)
}

// With ignoreDifferences on /spec/replicas, a new revision that changes something else
// leaves the replicas an autoscaler set; a new object gets Git's value; without the
// rule the apply resets them, as before.
func TestApplyRespectsIgnoredFields(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	ignore := func(o *unstructured.Unstructured) []string {
		if o.GetKind() == "Deployment" {
			return []string{"/spec/replicas", "/metadata/annotations/scaled-at"}
		}
		return nil
	}

	res, err := m.Apply(ctx, []*unstructured.Unstructured{scaled(t, ns, 2, "app:1")}, Options{Ignore: ignore})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicasOf(t, scaled(t, ns, 2, "app:1"))).To(Equal(int64(2)))

	autoscale(t, scaled(t, ns, 2, "app:1"), 5)
	res, err = m.Apply(ctx, []*unstructured.Unstructured{scaled(t, ns, 2, "app:2")}, Options{Previous: res.Inventory, Ignore: ignore})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("configured")).To(Equal(1))
	d := scaled(t, ns, 2, "app:2")
	g.Expect(imageOf(t, d)).To(Equal("app:2"))
	g.Expect(replicasOf(t, d)).To(Equal(int64(5)))

	// Nothing else changed: nothing is written.
	res, err = m.Apply(ctx, []*unstructured.Unstructured{scaled(t, ns, 2, "app:2")}, Options{Previous: res.Inventory, Ignore: ignore})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Count("unchanged")).To(Equal(1))

	// A drift correction keeps them too.
	autoscale(t, d, 7)
	g.Expect(m.Correct(ctx, scaled(t, ns, 2, "app:2"), ignore(d)...)).To(Succeed())
	g.Expect(replicasOf(t, d)).To(Equal(int64(7)))
	g.Expect(m.Correct(ctx, scaled(t, ns, 2, "app:2"))).To(Succeed())
	g.Expect(replicasOf(t, d)).To(Equal(int64(2)))

	autoscale(t, d, 5)
	_, err = m.Apply(ctx, []*unstructured.Unstructured{scaled(t, ns, 2, "app:3")}, Options{Previous: res.Inventory})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replicasOf(t, d)).To(Equal(int64(2)))
}

func TestApplyRefusesIgnoringIdentity(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	cm := configMap(t, ns, "cfg", "1")
	_, err := m.Apply(context.Background(), []*unstructured.Unstructured{cm}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range []string{"/metadata/name", "spec", ""} {
		_, err = m.Apply(context.Background(), []*unstructured.Unstructured{cm}, Options{Ignore: func(*unstructured.Unstructured) []string { return []string{p} }})
		g.Expect(err).To(HaveOccurred(), p)
	}
}

func TestCopyIgnored(t *testing.T) {
	live := map[string]any{
		"spec": map[string]any{
			"replicas": int64(5),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "a", "image": "live:a"},
			}}},
		},
		"metadata": map[string]any{"annotations": map[string]any{"a/b": "live"}},
	}
	for _, tc := range []struct {
		name     string
		obj      map[string]any
		pointers []string
		want     map[string]any
	}{{
		name:     "replaced",
		obj:      map[string]any{"spec": map[string]any{"replicas": int64(2)}},
		pointers: []string{"/spec/replicas"},
		want:     map[string]any{"spec": map[string]any{"replicas": int64(5)}},
	}, {
		name:     "added where Git has none",
		obj:      map[string]any{},
		pointers: []string{"/spec/replicas", "/metadata/annotations/a~1b"},
		want: map[string]any{
			"spec":     map[string]any{"replicas": int64(5)},
			"metadata": map[string]any{"annotations": map[string]any{"a/b": "live"}},
		},
	}, {
		name:     "removed where live has none",
		obj:      map[string]any{"spec": map[string]any{"paused": true, "replicas": int64(2)}},
		pointers: []string{"/spec/paused"},
		want:     map[string]any{"spec": map[string]any{"replicas": int64(2)}},
	}, {
		name: "a list item replaced, never added",
		obj: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "image": "git:a"},
		}}}}},
		pointers: []string{"/spec/template/spec/containers/0/image", "/spec/template/spec/containers/1/image"},
		want: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "image": "live:a"},
		}}}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(copyIgnored(tc.obj, live, tc.pointers)).To(Succeed())
			g.Expect(tc.obj).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(copyIgnored(map[string]any{}, live, []string{"spec"})).NotTo(Succeed())
	g.Expect(copyIgnored(map[string]any{}, live, []string{"/kind"})).NotTo(Succeed())
}
