package notify

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// TestProviderSecretNeedsTheTenantsRight is the attack: in tenant mode a tenant who may
// create Providers but not read the namespace's Secrets names one as spec.secretRef of a
// generic Provider pointing at its own server, whose token would sign (and whose address
// and headers would reach) that server. The operator asks first whether the namespace's
// tenant account may get the Secret, and sends nothing when it may not.
func TestProviderSecretNeedsTheTenantsRight(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := env.Namespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin-webhook"},
		StringData: map[string]string{"token": "t0ken-of-the-admin", "headers": "X-Api-Key: admin-k3y"}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	srv := receiver.New(t)
	p := &gitsyncv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steal"},
		Spec: gitsyncv1.ProviderSpec{Type: gitsyncv1.ProviderGeneric, Address: srv.URL,
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "admin-webhook"}}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())

	d := NewDispatcher(env.Client, env.Client, Options{Attempts: 1,
		SecretAccess: sources.NewSecretAccess(env.Client, "gitsync-tenant", true)})
	w := newWorker(d, types.NamespacedName{Namespace: ns, Name: "steal"}, p.Spec.Type)
	m := Message{Event: Event{Kind: "Application", Namespace: ns, Name: "web", Reason: "Applied", Message: "ok"}}
	err := w.attempt(ctx, m)
	g.Expect(errors.Is(err, sources.ErrSecretAccessDenied)).To(BeTrue(), "%v", err)
	var perm permanent
	g.Expect(errors.As(err, &perm)).To(BeTrue())
	g.Expect(srv.Requests()).To(BeEmpty())

	// The namespace's admin grants the tenant that Secret: the delivery carries it.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-secret"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"admin-webhook"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-secret"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "gitsync-tenant"}}})).To(Succeed())
	g.Expect(w.attempt(ctx, m)).To(Succeed())
	g.Expect(srv.Requests()).To(HaveLen(1))
	g.Expect(srv.Requests()[0].Header.Get("X-Api-Key")).To(Equal("admin-k3y"))
}
