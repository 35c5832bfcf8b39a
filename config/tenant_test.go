package config_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// The recommended install locks Applications down to the service account that the
// tenant example creates.
func TestDefaultInstallSetsTheTenantServiceAccount(t *testing.T) {
	g := NewWithT(t)
	var args []string
	for _, o := range build(t, "default") {
		if o.GetKind() == "Deployment" {
			// kustomize's maps hold Go ints, which unstructured's Nested* helpers refuse.
			podSpec := o.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			for _, a := range podSpec["containers"].([]any)[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
		}
	}
	g.Expect(args).To(ContainElement("--default-service-account=gitsync-tenant"))
	g.Expect(strings.Join(args, " ")).NotTo(ContainSubstring("--allow-cross-namespace-refs"))

	var names []string
	for _, o := range build(t, "tenant") {
		if o.GetKind() == "ServiceAccount" {
			names = append(names, o.GetName())
		}
	}
	g.Expect(names).To(Equal([]string{"gitsync-tenant"}))
}

// The tenant example, applied in a namespace, lets its service account manage the usual
// kinds there, and nothing cluster-scoped or in another namespace.
func TestTenantExampleGrantsOneNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := env.Namespace(t), env.Namespace(t)
	for _, o := range build(t, "tenant") {
		o.SetNamespace(ns)
		g.Expect(env.Client.Create(ctx, o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
	user := "system:serviceaccount:" + ns + ":gitsync-tenant"
	can := func(g Gomega, attrs authorizationv1.ResourceAttributes) bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attrs,
		}}
		g.Expect(env.Client.Create(ctx, review)).To(Succeed())
		return review.Status.Allowed
	}
	g.Eventually(func(g Gomega) {
		g.Expect(can(g, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"})).To(BeTrue())
		g.Expect(can(g, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: "apps", Resource: "deployments"})).To(BeTrue())
		g.Expect(can(g, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "secrets"})).To(BeTrue())
	}).Should(Succeed())
	g.Expect(can(g, authorizationv1.ResourceAttributes{Namespace: other, Verb: "create", Resource: "configmaps"})).To(BeFalse())
	g.Expect(can(g, authorizationv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"})).To(BeFalse())
	g.Expect(can(g, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"})).To(BeFalse())
	g.Expect(can(g, authorizationv1.ResourceAttributes{Verb: "create", Resource: "namespaces"})).To(BeFalse())
}
