package desired

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// A sync prepares the watches of its kinds before it applies; another Application's
// sync finishing meanwhile must not stop them (Prepare would then wait forever for a
// stopped watch, and the first sync hang in "applying").
func TestPreparedKindsSurviveAnotherApplicationsSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	r := New()
	w := drift.NewWatches(env.Metadata(t), env.Resource, func(drift.Event) {})
	defer w.Stop()
	r.Attach(w, nil)

	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	service := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	first := types.NamespacedName{Namespace: ns, Name: "first"}
	second := types.NamespacedName{Namespace: ns, Name: "second"}

	r.Prepare(ctx, first, []*unstructured.Unstructured{obj("v1", "Service", "web")})
	g.Expect(w.Kinds()).To(ContainElement(service))
	// The other Application (ConfigMaps only) finishes its sync while the first applies.
	g.Expect(r.Applied(ctx, second, []*unstructured.Unstructured{obj("v1", "ConfigMap", "cm")})).To(Succeed())
	g.Expect(w.Kinds()).To(ContainElement(service), "the first sync's kinds are still being prepared")

	// Once the first sync is recorded, its kinds are its desired ones.
	g.Expect(r.Applied(ctx, first, []*unstructured.Unstructured{obj("v1", "ConfigMap", "other")})).To(Succeed())
	g.Expect(w.Kinds()).NotTo(ContainElement(service))
}

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }
