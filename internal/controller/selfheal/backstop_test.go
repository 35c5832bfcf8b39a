package selfheal

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// The backstop (the quiet resync) finds, in the watch cache alone, the objects that
// another writer changed since their last check and those that are gone, and marks
// only them; an object no one touched is not marked, however often it runs.
func TestBackstopMarksWhatChangedSinceTheLastCheck(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	app := types.NamespacedName{Namespace: ns, Name: "demo"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	apply := func(name, manager, value string) {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(configMap)
		o.SetNamespace(ns)
		o.SetName(name)
		if manager == gitsyncv1.FieldManager {
			o.SetLabels(map[string]string{gitsyncv1.ApplicationLabel: app.Name, gitsyncv1.ApplicationNamespaceLabel: app.Namespace})
		}
		g.Expect(unstructured.SetNestedField(o.Object, value, "data", manager)).To(Succeed())
		g.Expect(env.Client.Patch(ctx, o, client.Apply, client.ForceOwnership, client.FieldOwner(manager))).To(Succeed())
	}
	names := []string{"untouched", "edited", "deleted"}
	refs := make([]drift.ObjectRef, len(names))
	for i, name := range names {
		apply(name, gitsyncv1.FieldManager, "from-git")
		refs[i] = drift.ObjectRef{GVK: configMap, Namespace: ns, Name: name}
	}

	w := drift.NewWatches(env.Metadata(t), env.Resource, func(drift.Event) {})
	defer w.Stop()
	g.Expect(w.Sync(ctx, map[schema.GroupVersionKind]bool{configMap: true})).To(Succeed())
	cached := func(name string) string {
		m, ok := w.Cached(drift.ObjectRef{GVK: configMap, Namespace: ns, Name: name})
		if !ok {
			return ""
		}
		return m.GetResourceVersion()
	}
	for _, name := range names {
		g.Eventually(func() string { return cached(name) }, 10*time.Second, 50*time.Millisecond).NotTo(BeEmpty())
	}

	r := New(desired.New())
	r.Watches = w
	r.Applied(app, refs) // what a sync's apply leaves: every object seen as applied
	g.Expect(r.Backstop(app, refs)).To(Equal(0), "nothing changed since the apply")
	g.Expect(r.takePending(app)).To(BeEmpty())

	before := cached("edited")
	apply("edited", "kubectl-edit", "by-hand")
	g.Eventually(func() string { return cached("edited") }, 10*time.Second, 50*time.Millisecond).NotTo(Equal(before))
	g.Expect(env.Client.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": ns, "name": "deleted"},
	}})).To(Succeed())
	g.Eventually(func() string { return cached("deleted") }, 10*time.Second, 50*time.Millisecond).To(BeEmpty())

	g.Expect(r.Backstop(app, refs)).To(Equal(2))
	g.Expect(r.takePending(app)).To(Equal([]drift.ObjectRef{refs[2], refs[1]}), "the deleted and the edited object, by inventory ID")

	// A check records what it saw; the untouched object is never marked.
	r.recordSeen(refs[1])
	g.Expect(r.Backstop(app, refs[:2])).To(Equal(0))
}

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }
