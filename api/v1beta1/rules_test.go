package v1beta1

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDefaultNamespace(t *testing.T) {
	app := &Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}
	if got := app.DefaultNamespace(); got != "team-a" {
		t.Errorf("DefaultNamespace() = %q, want the Application's namespace", got)
	}
	app.Spec.TargetNamespace = "apps"
	if got := app.DefaultNamespace(); got != "apps" {
		t.Errorf("DefaultNamespace() = %q, want spec.targetNamespace", got)
	}
}

func TestRefusesEmpty(t *testing.T) {
	for _, c := range []struct {
		name              string
		prune, allowEmpty bool
		n, previous       int
		want              bool
	}{
		{name: "an empty render would prune everything", prune: true, previous: 3, want: true},
		{name: "allowEmpty lets it", prune: true, allowEmpty: true, previous: 3},
		{name: "no prune: nothing is deleted", previous: 3},
		{name: "nothing applied before", prune: true},
		{name: "a render with objects", prune: true, n: 1, previous: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := &Application{Spec: ApplicationSpec{Prune: c.prune, AllowEmpty: c.allowEmpty}}
			if got := app.RefusesEmpty(c.n, c.previous); got != c.want {
				t.Errorf("RefusesEmpty(%d, %d) = %v, want %v", c.n, c.previous, got, c.want)
			}
		})
	}
}

func TestIgnorePointers(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	obj.SetNamespace("apps")
	obj.SetName("web")
	app := &Application{Spec: ApplicationSpec{IgnoreDifferences: []IgnoreDifference{
		{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
		{Group: "apps", Kind: "Deployment", Name: "web", Namespace: "apps", JSONPointers: []string{"/metadata/labels"}},
		{Group: "apps", Kind: "Deployment", Name: "api", JSONPointers: []string{"/spec/template"}},
		{Group: "apps", Kind: "Deployment", Namespace: "other", JSONPointers: []string{"/spec/paused"}},
		{Kind: "Deployment", JSONPointers: []string{"/data"}},
	}}}
	if got, want := app.IgnorePointers(obj), []string{"/spec/replicas", "/metadata/labels"}; !slices.Equal(got, want) {
		t.Errorf("IgnorePointers() = %v, want %v", got, want)
	}
}
