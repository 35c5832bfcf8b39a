package testenv

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceAccountToken creates the ServiceAccount ns/name, and when rules are given a Role
// with them bound to it, and returns a token the API server issued for it (TokenRequest,
// an hour) and its user name.
func (e *Env) ServiceAccountToken(t testing.TB, ns, name string, rules ...rbacv1.PolicyRule) (token, user string) {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if len(rules) > 0 {
		if err := e.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}); err != nil {
			t.Fatal(err)
		}
		if err := e.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Through e.Client's token subresource: client-go's Clientset would link every API
	// group's typed client into each test binary, the benchmarks' included, whose
	// resident size they measure.
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := e.Client.SubResource("token").Create(ctx, account, req); err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, name, err)
	}
	return req.Status.Token, "system:serviceaccount:" + ns + ":" + name
}
