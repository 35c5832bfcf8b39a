// Package scheme is gitsync's one runtime.Scheme: the built-in kinds, CRDs
// (apiextensions) and gitsync's own kinds, for the operator, the CLI, the UI and tests.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gitsyncv1alpha1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// New returns a new Scheme with every kind gitsync reads or writes by type.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(gitsyncv1alpha1.AddToScheme(s))
	utilruntime.Must(gitsyncv1.AddToScheme(s))
	return s
}
