package config_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitsync-dev/gitsync/config"
)

// managerBindings returns the ClusterRoles of objs and their bindings ("binding→role").
func managerBindings(objs []*unstructured.Unstructured) (roles, refs []string) {
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			roles = append(roles, o.GetName())
		case "ClusterRoleBinding":
			ref := o.Object["roleRef"].(map[string]any)
			refs = append(refs, o.GetName()+"→"+ref["name"].(string))
		}
	}
	return roles, refs
}

// config/default, which `gitsync install`, the OLM bundle and the chart's defaults are,
// binds the operator to the least-privilege tenant-mode ClusterRole (it is in tenant
// mode); config/least-privilege is the same install; config/full-privilege binds
// gitsync-manager instead, and nothing else differs. A real API server accepts each.
func TestLeastPrivilegeInstall(t *testing.T) {
	g := NewWithT(t)
	def, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	least := build(t, "least-privilege")
	for name, objs := range map[string][]*unstructured.Unstructured{"default": def, "least-privilege": least} {
		roles, refs := managerBindings(objs)
		g.Expect(roles).To(Equal([]string{"gitsync-manager-tenant-mode"}), name)
		g.Expect(refs).To(Equal([]string{"gitsync-manager-tenant-mode→gitsync-manager-tenant-mode"}), name)
		g.Expect(len(objs)).To(Equal(len(def)), name)
	}
	full, err := config.InstallFullPrivilege()
	g.Expect(err).NotTo(HaveOccurred())
	roles, refs := managerBindings(full)
	g.Expect(roles).To(Equal([]string{"gitsync-manager"}))
	g.Expect(refs).To(Equal([]string{"gitsync-manager→gitsync-manager"}))
	g.Expect(len(full)).To(Equal(len(def)))
	serverDryRun(t, least)
	serverDryRun(t, full)
}

// The tenant-mode ClusterRole grants every right of gitsync-manager except writing
// anything: each (group, resource, verb) of gitsync-manager's other rules is allowed
// (a new +kubebuilder:rbac marker fails here until the role has it), reading is allowed
// everywhere, writing workloads, RBAC or namespaces is not.
func TestTenantModeRoleIsLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	role := &rbacv1.ClusterRole{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(only(t, build(t, "rbac/tenant-mode")).Object, role)).To(Succeed())
	role.Name = "tenant-mode-" + ns // cluster-scoped: a name of this test's own
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gitsync", Namespace: ns}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
	})

	can := func(g Gomega, attrs authorizationv1.ResourceAttributes) bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":gitsync",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attrs,
		}}
		g.Expect(env.Client.Create(ctx, review)).To(Succeed())
		return review.Status.Allowed
	}
	g.Eventually(func(g Gomega) {
		g.Expect(can(g, authorizationv1.ResourceAttributes{Verb: "watch", Group: "apps", Resource: "deployments"})).To(BeTrue())
	}).Should(Succeed())

	manager := &rbacv1.ClusterRole{}
	for _, o := range build(t, "rbac") {
		if o.GetKind() == "ClusterRole" {
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, manager)).To(Succeed())
		}
	}
	checked := 0
	for _, rule := range manager.Rules {
		if slices.Contains(rule.Verbs, "*") {
			continue // the one rule tenant mode narrows
		}
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range rule.Verbs {
					attrs := authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: verb, Group: group, Resource: resource, Subresource: sub}
					g.Expect(can(g, attrs)).To(BeTrue(), "gitsync-manager allows %s %s/%s, the tenant-mode role does not", verb, group, res)
					checked++
				}
			}
		}
	}
	g.Expect(checked).To(BeNumerically(">", 20))

	allowed := []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: "apps", Resource: "deployments"},
		{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Namespace: "team-a", Verb: "watch", Resource: "secrets"},
		{Namespace: "team-a", Verb: "impersonate", Resource: "serviceaccounts", Name: "gitsync-tenant"},
		{Namespace: "team-a", Verb: "create", Group: "events.k8s.io", Resource: "events"},
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
	}
	for _, a := range allowed {
		g.Expect(can(g, a)).To(BeTrue(), "%+v", a)
	}
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "team-a", Verb: "create", Group: "apps", Resource: "deployments"},
		{Namespace: "team-a", Verb: "delete", Resource: "configmaps"},
		{Namespace: "team-a", Verb: "patch", Resource: "secrets"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "delete", Resource: "namespaces"},
		{Verb: "impersonate", Resource: "users"},
		{Verb: "impersonate", Resource: "groups"},
		{Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	}
	for _, a := range denied {
		g.Expect(can(g, a)).To(BeFalse(), "%+v", a)
	}
}

func only(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	return objs[0]
}
