package applier

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// An Application applies as its spec.serviceAccountName, else as the default service
// account of its namespace (--default-service-account), else as the operator.
func TestIdentity(t *testing.T) {
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}}
	for _, c := range []struct{ sa, defaultSA, want string }{
		{"", "", OperatorIdentity},
		{"", "gitsync-tenant", "system:serviceaccount:team:gitsync-tenant"},
		{"deployer", "gitsync-tenant", "system:serviceaccount:team:deployer"},
	} {
		app.Spec.ServiceAccountName = c.sa
		if got := Identity(app, c.defaultSA); got != c.want {
			t.Errorf("Identity(sa=%q, default=%q) = %q, want %q", c.sa, c.defaultSA, got, c.want)
		}
	}
}
