package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	"github.com/gitsync-dev/gitsync/internal/ui"
)

// asUser is env's config impersonating a user (RBAC then decides as for that user).
func asUser(name string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	return cfg
}

// grantView lets user read gitsync's kinds, events and workloads in ns only, and list
// namespaces.
func grantView(t *testing.T, user, ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ui-view", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"gitsync.dev"}, Resources: []string{"applications", "gitrepositories"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"events", "pods", "configmaps"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read},
	}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ui-view", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ui-view"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})).To(Succeed())
	name := "ui-namespaces-" + user
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})).To(Succeed())
}

func TestUserSeesOnlyApplicationsRBACAllows(t *testing.T) {
	g := NewWithT(t)
	mine, theirs := newFixture(t), newFixture(t)
	user := "alice-" + rand.String(5)
	grantView(t, user, mine.ns)
	srv := startUI(t, asUser(user), ui.Options{})

	resp, body := get(t, srv.URL+"/api/apps")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var apps struct{ Items []ui.AppRow }
	g.Expect(json.Unmarshal([]byte(body), &apps)).To(Succeed())
	g.Expect(apps.Items).To(ConsistOf(HaveField("Namespace", mine.ns)))
	_, page := get(t, srv.URL+"/")
	g.Expect(page).To(ContainSubstring(mine.ns))
	g.Expect(page).NotTo(ContainSubstring(theirs.ns))

	resp, _ = get(t, srv.URL+"/api/apps/"+theirs.ns+"/web")
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	resp, _ = get(t, srv.URL+"/apps/"+theirs.ns+"/web")
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))

	// Read, not write: no actions offered, and the endpoint refuses.
	_, page = get(t, srv.URL+"/apps/"+mine.ns+"/web")
	g.Expect(page).To(ContainSubstring(`id="tree"`))
	g.Expect(page).NotTo(ContainSubstring(`data-action=`))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/apps/"+mine.ns+"/web/sync", nil)
	req.Header.Set("X-CSRF-Token", between(page, `name="csrf-token" content="`, `"`))
	req.Header.Set("Origin", srv.URL)
	resp, err := httpc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
}
