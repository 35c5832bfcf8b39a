package drift

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A 404 of a resource the API server does not serve is told apart from a missing object.
func TestKindNotServed(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"object not found", apierrors.NewNotFound(gr, "w"), false},
		{"object not found, wrapped", fmt.Errorf("reading: %w", apierrors.NewNotFound(gr, "w")), false},
		{"unknown resource (client-go's generic 404)", fmt.Errorf("dry-run: %w", apierrors.NewGenericServerResponse(404, "patch", gr, "w", "404 page not found", 0, true)), true},
		{"404 naming nothing", &apierrors.StatusError{ErrStatus: apierrors.NewNotFound(gr, "").ErrStatus}, true},
		{"create while the CRD terminates", apierrors.NewForbidden(gr, "w", errors.New("create not allowed while custom resource definition is terminating")), true},
		{"forbidden by RBAC", apierrors.NewForbidden(gr, "w", errors.New("user cannot patch")), false},
		{"not an API error", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := KindNotServed(c.err); got != c.want {
			t.Errorf("%s: KindNotServed = %v, want %v", c.name, got, c.want)
		}
	}
}
