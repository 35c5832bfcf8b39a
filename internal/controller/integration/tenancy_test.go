package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
)

// The suite's operator runs without --allow-cross-namespace-refs: an Application may not
// use another namespace's GitRepository, nor wait on another namespace's Application,
// and the other namespace's repository is never touched.
func TestApplicationRefusesCrossNamespaceReferences(t *testing.T) {
	g := NewWithT(t)
	other, _ := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("private", "secret-ish")})
	other.app("owner")
	otherApp := other.waitApplied("owner", other.repo.Head("main"))
	g.Expect(otherApp.Status.ServiceAccount).To(Equal(impersonate.OperatorIdentity))
	before := getRepo(g, other.ns, "repo").Annotations[gitsyncv1.RequestedAtAnnotation]

	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("mine", "1")})
	f.app("borrow", func(a *gitsyncv1.Application) { a.Spec.SourceRef.Namespace = other.ns })
	f.app("depends", func(a *gitsyncv1.Application) {
		a.Spec.DependsOn = []gitsyncv1.DependencyReference{{Name: "owner", Namespace: other.ns}}
	})
	// The same namespace written out is not a cross-namespace reference.
	f.app("explicit", func(a *gitsyncv1.Application) { a.Spec.SourceRef.Namespace = f.ns })

	msg := f.waitNotReady("borrow", gitsyncv1.AccessDeniedReason)
	g.Expect(msg).To(ContainSubstring(other.ns + "/repo"))
	msg = f.waitNotReady("depends", gitsyncv1.AccessDeniedReason)
	g.Expect(msg).To(ContainSubstring(other.ns + "/owner"))
	f.waitApplied("explicit", sha)

	g.Expect(f.exists(g, &corev1.ConfigMap{}, "private")).To(BeFalse())
	g.Expect(getRepo(g, other.ns, "repo").Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(before))
	for _, name := range []string{"borrow", "depends"} {
		app := f.get(g, name)
		g.Expect(app.Status.LastAttemptedRevision).To(BeEmpty())
		g.Expect(app.Status.Inventory).To(BeNil())
	}
}

// grantConfigMaps lets the service account sa change ConfigMaps in ns (a Role of our own:
// envtest runs no controller manager, so the aggregated "admin" ClusterRole is empty).
func grantConfigMaps(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// Deleting an Application whose RoleBinding is already gone (as in a namespace deletion)
// orphans what it may no longer delete, says so in a Warning event, and finishes.
func TestApplicationDeletionOrphansWhatItMayNotDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "1"), "b.yaml": configMapYAML("b", "1")})
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}})).To(Succeed())
	grantConfigMaps(t, f.ns, "deployer")
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.ServiceAccountName = "deployer"
		a.Spec.Prune = true
	})
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.ServiceAccount).To(Equal("system:serviceaccount:" + f.ns + ":deployer"))

	g.Expect(env.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}})).To(Succeed())
	g.Expect(env.Client.Delete(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return f.exists(g, &gitsyncv1.Application{}, "app") }).
		WithTimeout(10 * time.Second).WithPolling(pollInterval).Should(BeFalse())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "a")).To(BeTrue())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "b")).To(BeTrue())
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, f.ns, "app") {
			if e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.OrphanedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(SatisfyAll(
		ContainSubstring("ConfigMap/"+f.ns+"/a orphaned"),
		ContainSubstring("ConfigMap/"+f.ns+"/b orphaned"),
		ContainSubstring("system:serviceaccount:"+f.ns+":deployer"))))
}

// With autoSync off, a sync request made while the Application waits for a dependency
// stays pending: the sync runs once the dependency is ready, with no second request.
func TestManualSyncRequestSurvivesADependencyWait(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"base/cm.yaml": configMapYAML("base", "1"),
		"app/cm.yaml":  configMapYAML("dependent", "1"),
	})
	f.app("dependent", func(a *gitsyncv1.Application) {
		a.Spec.Path = "app"
		a.Spec.AutoSync = ptr.To(false)
		a.Spec.DependsOn = []gitsyncv1.DependencyReference{{Name: "base"}}
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "now"}
	})
	f.waitNotReady("dependent", gitsyncv1.DependencyNotReadyReason)
	g.Consistently(func(g Gomega) string { return f.get(g, "dependent").Status.LastHandledReconcileAt }).
		WithTimeout(time.Second).WithPolling(pollInterval).Should(BeEmpty())

	f.app("base", func(a *gitsyncv1.Application) { a.Spec.Path = "base" })
	f.waitApplied("base", sha)
	app := f.waitApplied("dependent", sha)
	g.Expect(app.Status.LastHandledReconcileAt).To(Equal("now"))
	g.Expect(f.configMap(g, "dependent").Data["value"]).To(Equal("1"))
}

// An Applied event of a large sync is summarized so that the API server accepts it.
func TestAppliedEventOfALargeSync(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("cm-%03d.yaml", i)] = configMapYAML(fmt.Sprintf("cm-%03d", i), "1")
	}
	f, sha := newAppFixture(t, files)
	f.app("app")
	f.waitApplied("app", sha)
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, f.ns, "app") {
			if e.Reason == "Applied" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ConsistOf(SatisfyAll(
		HavePrefix("revision main@sha1:"+sha+"\n300 created:\nConfigMap/"+f.ns+"/cm-000 created\n"),
		ContainSubstring("more"),
		WithTransform(func(s string) int { return len(s) }, BeNumerically("<=", 1024)))))
}
