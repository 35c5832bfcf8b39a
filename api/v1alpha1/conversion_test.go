package v1alpha1

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/gitsync-dev/gitsync/api/v1beta1"
)

// rounds is how many fuzzed objects of each kind each direction converts.
const rounds = 500

// convertible pairs a kind's v1alpha1 spoke with its v1beta1 hub.
type convertible struct {
	kind  string
	spoke func() conversion.Convertible
	hub   func() conversion.Hub
}

var kinds = []convertible{
	{GitRepositoryKind, func() conversion.Convertible { return &GitRepository{} }, func() conversion.Hub { return &v1beta1.GitRepository{} }},
	{HelmRepositoryKind, func() conversion.Convertible { return &HelmRepository{} }, func() conversion.Hub { return &v1beta1.HelmRepository{} }},
	{ApplicationKind, func() conversion.Convertible { return &Application{} }, func() conversion.Hub { return &v1beta1.Application{} }},
}

// newFiller fills objects as apimachinery's own round-trip tests do (object metadata,
// times of whole seconds as JSON keeps them, quantities, raw extensions holding JSON).
func newFiller(t *testing.T, seed int64) interface{ Fill(any) } {
	t.Helper()
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(s)).NilChance(0.2).NumElements(0, 3)
}

// clearTypeMeta drops apiVersion and kind, which a conversion sets and the filler leaves empty.
func clearTypeMeta(o runtime.Object) {
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

// v1alpha1 → v1beta1 → v1alpha1 gives back the object it started from, field for field.
func TestRoundTripThroughHub(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			f := newFiller(t, int64(len(k.kind)))
			for i := 0; i < rounds; i++ {
				in := k.spoke()
				f.Fill(in)
				hub := k.hub()
				if err := in.ConvertTo(hub); err != nil {
					t.Fatalf("ConvertTo: %v", err)
				}
				if gvk := hub.GetObjectKind().GroupVersionKind(); gvk != v1beta1.GroupVersion.WithKind(k.kind) {
					t.Fatalf("the hub's apiVersion/kind = %v", gvk)
				}
				out := k.spoke()
				if err := out.ConvertFrom(hub); err != nil {
					t.Fatalf("ConvertFrom: %v", err)
				}
				clearTypeMeta(out)
				if !apiequality.Semantic.DeepEqual(in, out) {
					t.Fatalf("v1alpha1 → v1beta1 → v1alpha1 lost something:\n%s", diff.Diff(in, out))
				}
			}
		})
	}
}

// v1beta1 → v1alpha1 → v1beta1 gives back the object it started from, field for field.
func TestRoundTripFromHub(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			f := newFiller(t, int64(len(k.kind))+1000)
			for i := 0; i < rounds; i++ {
				in := k.hub()
				f.Fill(in)
				spoke := k.spoke()
				if err := spoke.ConvertFrom(in); err != nil {
					t.Fatalf("ConvertFrom: %v", err)
				}
				if gvk := spoke.GetObjectKind().GroupVersionKind(); gvk != GroupVersion.WithKind(k.kind) {
					t.Fatalf("the spoke's apiVersion/kind = %v", gvk)
				}
				out := k.hub()
				if err := spoke.ConvertTo(out); err != nil {
					t.Fatalf("ConvertTo: %v", err)
				}
				clearTypeMeta(out)
				if !apiequality.Semantic.DeepEqual(in, out) {
					t.Fatalf("v1beta1 → v1alpha1 → v1beta1 lost something:\n%s", diff.Diff(in, out))
				}
			}
		})
	}
}
