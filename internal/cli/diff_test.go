package cli

import (
	"context"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

const imageField = "/spec/template/spec/containers/name=web/image"

func TestDiff(t *testing.T) {
	f := newFixture(t, nil)

	t.Run("no change", func(t *testing.T) {
		g := NewWithT(t)
		r := gitsync(t, "diff", "app", "web", "-n", f.ns)
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.out).To(ContainSubstring("revision main@sha1:" + f.sha))
		g.Expect(r.out).To(ContainSubstring("no changes (3 unchanged)"))
		r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, appFiles("nginx:1.0", "old-s3cret-value")))
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.out).To(ContainSubstring("no changes"))
	})

	t.Run("image change", func(t *testing.T) {
		g := NewWithT(t)
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, appFiles("nginx:2.0", "old-s3cret-value")))
		g.Expect(r.code).To(Equal(1), r.String())
		g.Expect(r.out).To(ContainSubstring("configured Deployment/" + f.ns + "/web\n    " + imageField + "\n"))
		g.Expect(r.out).To(ContainSubstring("-      - image: nginx:1.0"))
		g.Expect(r.out).To(ContainSubstring("+      - image: nginx:2.0"))
		g.Expect(r.out).To(ContainSubstring("0 created, 1 configured, 0 pruned, 2 unchanged"))
		g.Expect(r.err).To(BeEmpty())

		r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--exit-code=false", "--path", localCopy(t, appFiles("nginx:2.0", "old-s3cret-value")))
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.out).To(ContainSubstring("1 configured"))
	})

	t.Run("removed file is pruned, new file created", func(t *testing.T) {
		g := NewWithT(t)
		files := appFiles("nginx:1.0", "old-s3cret-value")
		delete(files, "app/configmap.yaml")
		files["app/other.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, files))
		g.Expect(r.code).To(Equal(1), r.String())
		g.Expect(r.out).To(ContainSubstring("pruned     ConfigMap/" + f.ns + "/settings\n"))
		g.Expect(r.out).To(ContainSubstring("created    ConfigMap/" + f.ns + "/other\n"))
		g.Expect(r.out).To(ContainSubstring("1 created, 0 configured, 1 pruned, 2 unchanged"))
	})

	t.Run("broken YAML is an error, never 1", func(t *testing.T) {
		g := NewWithT(t)
		files := appFiles("nginx:1.0", "old-s3cret-value")
		files["app/broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: [name: x\n"
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, files))
		g.Expect(r.code).To(Equal(2), r.String())
		g.Expect(r.err).To(ContainSubstring("broken.yaml"))
		r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--exit-code=false", "--path", localCopy(t, files))
		g.Expect(r.code).To(Equal(2), r.String())
		r = gitsync(t, "diff", "app", "missing", "-n", f.ns)
		g.Expect(r.code).To(Equal(2), r.String())
		g.Expect(r.err).To(ContainSubstring(`Application "missing" not found`))
		// Usage errors are errors too.
		g.Expect(gitsync(t, "diff", "app", "-n", f.ns).code).To(Equal(2))
		g.Expect(gitsync(t, "diff", "app", "web", "--no-such-flag").code).To(Equal(2))
		g.Expect(gitsync(t, "diff", "sources", "app-repo", "-n", f.ns).code).To(Equal(2))
	})

	t.Run("Secret values are never printed", func(t *testing.T) {
		g := NewWithT(t)
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, appFiles("nginx:1.0", "new-s3cret-value")))
		g.Expect(r.code).To(Equal(1), r.String())
		g.Expect(r.out).To(ContainSubstring("configured Secret/" + f.ns + "/creds\n    /data/password\n"))
		g.Expect(r.out).To(ContainSubstring("-  password: '***'"))
		g.Expect(r.out).To(ContainSubstring("+  password: '*** (changed)'"))
		for _, secret := range []string{"old-s3cret-value", "new-s3cret-value"} {
			g.Expect(r.out + r.err).NotTo(ContainSubstring(secret))
			g.Expect(r.out + r.err).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret))))
		}
	})

	t.Run("ignoreDifferences", func(t *testing.T) {
		g := NewWithT(t)
		app := f.app.DeepCopy()
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(app), app)).To(Succeed())
		base := client.MergeFrom(app.DeepCopy())
		app.Spec.IgnoreDifferences = []gitsyncv1.IgnoreDifference{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/image"}}}
		g.Expect(env.Client.Patch(context.Background(), app, base)).To(Succeed())
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", localCopy(t, appFiles("nginx:2.0", "old-s3cret-value")))
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.out).To(ContainSubstring("no changes (3 unchanged)"))
	})

	t.Run("forbidden dry-run names the patch permission", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		// A read-only user (impersonated with --as): get and list everything, no patch.
		g.Expect(env.Client.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: f.ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
		})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: f.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "viewer"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "viewer"}},
		})).To(Succeed())
		r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--as", "viewer", "--path", localCopy(t, appFiles("nginx:1.0", "old-s3cret-value")))
		g.Expect(r.code).To(Equal(2), r.String())
		g.Expect(r.err).To(ContainSubstring("forbidden"))
		g.Expect(r.err).To(ContainSubstring("needs patch permission"))
	})
}

// The diff of the source's new revision names the change, the sync that follows applies
// it, and the diff after it finds nothing: the same answer as the sync.
func TestDiffThenSyncThenDiff(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	f.setAutoSync(t, false)
	files := appFiles("nginx:2.0", "old-s3cret-value")
	delete(files, "app/configmap.yaml")
	sha := f.repo.Commit("main", "new image, no configmap", files, "app/configmap.yaml")

	r := gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("revision main@sha1:" + sha))

	r = gitsync(t, "diff", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring("revision main@sha1:" + sha))
	g.Expect(r.out).To(ContainSubstring(imageField))
	g.Expect(r.out).To(ContainSubstring("0 created, 1 configured, 1 pruned, 1 unchanged"))

	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("applied revision main@sha1:" + sha + " (0 created, 1 configured, 1 unchanged, 1 pruned)"))

	r = gitsync(t, "diff", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("no changes (2 unchanged)"))
}
