package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
)

// appFixture is a Git repository, its GitRepository and an Application in a fresh namespace.
type appFixture struct {
	t    *testing.T
	ns   string
	srv  *gittest.Server
	repo *gittest.Repo
}

func newAppFixture(t *testing.T, files map[string]string) (*appFixture, string) {
	t.Helper()
	return newAppFixtureIn(t, env.Namespace(t), files)
}

// newAppFixtureIn is newAppFixture in the namespace ns.
func newAppFixtureIn(t *testing.T, ns string, files map[string]string) (*appFixture, string) {
	t.Helper()
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("app")
	sha := f.repo.Commit("main", "initial", files)
	newGitRepository(t, f.ns, "repo", f.srv.HTTPURL("app"), nil, "")
	return f, sha
}

// app creates an Application of the fixture's repository.
func (f *appFixture) app(name string, mutate ...func(*gitsyncv1.Application)) {
	f.t.Helper()
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
			Path:      "./",
		},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := env.Client.Create(context.Background(), app); err != nil {
		f.t.Fatal(err)
	}
}

// edit changes an Application with a merge patch (no conflict with the controller's writes).
func (f *appFixture) edit(g Gomega, name string, change func(*gitsyncv1.Application)) {
	app := f.get(g, name)
	base := client.MergeFrom(app.DeepCopy())
	change(app)
	g.Expect(env.Client.Patch(context.Background(), app, base)).To(Succeed())
}

func (f *appFixture) get(g Gomega, name string) *gitsyncv1.Application {
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, app)).To(Succeed())
	return app
}

// waitApplied waits until the Application is Ready and Synced at main@sha1:<sha>.
func (f *appFixture) waitApplied(name, sha string) *gitsyncv1.Application {
	f.t.Helper()
	return f.waitAppliedAt(name, "main@sha1:"+sha)
}

// waitAppliedAt waits until the Application is Ready and Synced at the revision.
func (f *appFixture) waitAppliedAt(name, revision string) *gitsyncv1.Application {
	f.t.Helper()
	var app *gitsyncv1.Application
	NewWithT(f.t).Eventually(func(g Gomega) {
		app = f.get(g, name)
		ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision))
		g.Expect(app.Status.Sync).NotTo(BeNil())
		g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusSynced))
		g.Expect(app.Status.Sync.Revision).To(Equal(revision))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return app
}

// waitNotReady waits until Ready=False with the reason, and returns its message.
func (f *appFixture) waitNotReady(name, reason string) string {
	f.t.Helper()
	var msg string
	NewWithT(f.t).Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(f.get(g, name).Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
		msg = ready.Message
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return msg
}

func (f *appFixture) configMap(g Gomega, name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, cm)).To(Succeed())
	return cm
}

func (f *appFixture) exists(g Gomega, obj client.Object, name string) bool {
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

func configMapYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func TestApplicationAppliesCommit(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"cm.yaml": configMapYAML("one", "1"),
		"README":  "not yaml",
	})
	f.app("app")
	app := f.waitApplied("app", sha)

	cm := f.configMap(g, "one")
	g.Expect(cm.Data).To(HaveKeyWithValue("value", "1"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "app"))
	g.Expect(cm.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationNamespaceLabel, f.ns))
	g.Expect(app.Status.Inventory.Entries).To(ConsistOf(gitsyncv1.InventoryEntry{ID: f.ns + "_one__ConfigMap", V: "v1"}))
	g.Expect(app.Status.LastAttemptedRevision).To(Equal("main@sha1:" + sha))
	g.Expect(app.Status.History).To(HaveLen(1))
	g.Expect(app.Status.History[0].Result).To(Equal(gitsyncv1.SyncResultSucceeded))
	g.Expect(app.Status.History[0].Created).To(Equal(1))
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))
	g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.HealthyCondition)).To(BeTrue())
	g.Expect(app.Finalizers).To(ContainElement(gitsyncv1.Finalizer))
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, f.ns, "app") {
			notes = append(notes, e.Reason+": "+e.Note)
		}
		return notes
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(
		ContainSubstring("Applied: revision main@sha1:" + sha + "\nConfigMap/" + f.ns + "/one created")))
}

func TestApplicationRewritesOnlyWhatChanged(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("cm-%d.yaml", i)] = configMapYAML(fmt.Sprintf("cm-%d", i), "v1")
	}
	f, sha := newAppFixture(t, files)
	f.app("app")
	f.waitApplied("app", sha)
	versions := map[string]string{}
	for i := range 10 {
		name := fmt.Sprintf("cm-%d", i)
		versions[name] = f.configMap(g, name).ResourceVersion
	}

	sha2 := f.repo.Commit("main", "change cm-3", map[string]string{"cm-3.yaml": configMapYAML("cm-3", "v2")})
	app := f.waitApplied("app", sha2)
	for i := range 10 {
		name := fmt.Sprintf("cm-%d", i)
		cm := f.configMap(g, name)
		if i == 3 {
			g.Expect(cm.Data["value"]).To(Equal("v2"))
			g.Expect(cm.ResourceVersion).NotTo(Equal(versions[name]))
		} else {
			g.Expect(cm.ResourceVersion).To(Equal(versions[name]), name)
		}
	}
	g.Expect(app.Status.History[0].Configured).To(Equal(1))
	g.Expect(app.Status.History[0].Unchanged).To(Equal(9))
}

func TestApplicationPrune(t *testing.T) {
	for _, prune := range []bool{true, false} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			g := NewWithT(t)
			f, sha := newAppFixture(t, map[string]string{
				"keep.yaml": configMapYAML("keep", "1"),
				"gone.yaml": configMapYAML("gone", "1"),
			})
			f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = prune })
			f.waitApplied("app", sha)

			sha2 := f.repo.Commit("main", "remove gone", nil, "gone.yaml")
			app := f.waitApplied("app", sha2)
			g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(Equal(!prune))
			g.Expect(f.exists(g, &corev1.ConfigMap{}, "keep")).To(BeTrue())
			g.Expect(app.Status.Inventory.Entries).To(ConsistOf(gitsyncv1.InventoryEntry{ID: f.ns + "_keep__ConfigMap", V: "v1"}))
			if prune {
				g.Expect(app.Status.History[0].Pruned).To(Equal(1))
			}
		})
	}
}

func TestApplicationBrokenCommitKeepsLastGoodState(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "good")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)

	f.repo.Commit("main", "break", map[string]string{
		"a.yaml":      configMapYAML("a", "changed"),
		"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
	})
	msg := f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("broken.yaml"))
	// Conditions and the rest of status are separate patches: wait for both.
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusOutOfSync))
		g.Expect(app.Status.History[0].Result).To(Equal(gitsyncv1.SyncResultFailed))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("good"))
}

func TestApplicationInvalidObjectAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("cm-%d.yaml", i)] = configMapYAML(fmt.Sprintf("cm-%d", i), "v")
	}
	// A Deployment without a selector and containers fails the API server's validation.
	files["deploy.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  template:\n    spec: {}\n"
	f, _ := newAppFixture(t, files)
	f.app("app")
	msg := f.waitNotReady("app", gitsyncv1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring("bad"))
	for i := range 4 {
		g.Expect(f.exists(g, &corev1.ConfigMap{}, fmt.Sprintf("cm-%d", i))).To(BeFalse())
	}
	g.Expect(f.get(g, "app").Status.LastAppliedRevision).To(BeEmpty())
}

func TestApplicationEmptyRender(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "1"), "README": "x"})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)

	emptySHA := f.repo.Commit("main", "remove all", nil, "a.yaml")
	msg := f.waitNotReady("app", gitsyncv1.PruneFailedReason)
	g.Expect(msg).To(ContainSubstring("allowEmpty"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "a")).To(BeTrue())

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.AllowEmpty = true })
	app := f.waitApplied("app", emptySHA)
	g.Eventually(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "a") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	g.Expect(app.Status.Inventory.Entries).To(BeEmpty())
}

func TestApplicationCRDAndNamespaceInOneCommit(t *testing.T) {
	g := NewWithT(t)
	suffix := strings.TrimPrefix(env.Namespace(t), "test-")
	newNS := "created-by-" + suffix
	// A group of its own, so that a repeated run (-count) meets no CRD of an earlier one.
	group := suffix + ".example.gitsync.dev"
	f, sha := newAppFixture(t, map[string]string{
		"crd.yaml":    manifests.WidgetCRD(group),
		"widget.yaml": "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n",
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + newNS + "\n",
		"in-ns.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n  namespace: " + newNS + "\ndata: {a: b}\n",
	})
	f.app("app")
	f.waitApplied("app", sha)

	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "w"}, widget)).To(Succeed())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: newNS, Name: "inside"}, &corev1.ConfigMap{})).To(Succeed())
}

func TestApplicationImmutableFieldAndForce(t *testing.T) {
	g := NewWithT(t)
	immutableCM := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  value: %q\n", v)
	}
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": immutableCM("1")})
	f.app("app")
	f.waitApplied("app", sha)
	uid := f.configMap(g, "frozen").UID

	sha2 := f.repo.Commit("main", "change frozen", map[string]string{"cm.yaml": immutableCM("2")})
	msg := f.waitNotReady("app", gitsyncv1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring("frozen"))
	g.Expect(msg).To(ContainSubstring("immutable"))
	g.Expect(f.configMap(g, "frozen").Data["value"]).To(Equal("1"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Force = true })
	f.waitApplied("app", sha2)
	cm := f.configMap(g, "frozen")
	g.Expect(cm.Data["value"]).To(Equal("2"))
	g.Expect(cm.UID).NotTo(Equal(uid))
}

func TestApplicationServiceAccountWithoutRights(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}})).To(Succeed())
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.ServiceAccountName = "deployer" })
	msg := f.waitNotReady("app", gitsyncv1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring("forbidden"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "a")).To(BeFalse())

	// Granted the rights, the same Application applies. (envtest runs no controller
	// manager, so the aggregated "admin" ClusterRole is empty: a Role of our own.)
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: f.ns}},
	})).To(Succeed())
	f.waitApplied("app", sha)
}

func TestApplicationConflictWithAnotherApplication(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("shared", "1")})
	f.app("first")
	f.waitApplied("first", sha)
	f.app("second")
	msg := f.waitNotReady("second", gitsyncv1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring(f.ns + "/first"))
	g.Expect(f.configMap(g, "shared").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "first"))
}

func TestApplicationRefusesEscapes(t *testing.T) {
	cases := map[string]struct {
		files  map[string]string
		change func(string)
		expect string
	}{
		"symlink": {
			files: map[string]string{"kustomization.yaml": "resources:\n  - link.yaml\n"},
			change: func(wt string) {
				if err := os.Symlink("/etc/hostname", filepath.Join(wt, "link.yaml")); err != nil {
					panic(err)
				}
			},
			expect: "outside",
		},
		"remote-base": {
			files:  map[string]string{"kustomization.yaml": "resources:\n  - https://github.com/example/repo//deploy?ref=main\n"},
			expect: "remote",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, _ := newAppFixture(t, map[string]string{"placeholder": "x"})
			f.repo.CommitFunc("main", name, func(wt string) {
				for p, c := range tc.files {
					if err := os.WriteFile(filepath.Join(wt, p), []byte(c), 0o644); err != nil {
						panic(err)
					}
				}
				if tc.change != nil {
					tc.change(wt)
				}
			})
			f.app("app")
			msg := f.waitNotReady("app", gitsyncv1.BuildFailedReason)
			NewWithT(t).Expect(strings.ToLower(msg)).To(ContainSubstring(tc.expect))
		})
	}
}

func TestApplicationDeletion(t *testing.T) {
	for _, prune := range []bool{true, false} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			g := NewWithT(t)
			f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("owned", "1")})
			f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = prune })
			app := f.waitApplied("app", sha)
			g.Expect(env.Client.Delete(context.Background(), app)).To(Succeed())
			g.Eventually(func(g Gomega) bool { return f.exists(g, &gitsyncv1.Application{}, "app") }).
				WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
			g.Expect(f.exists(g, &corev1.ConfigMap{}, "owned")).To(Equal(!prune))
		})
	}
}

func TestApplicationManualSyncAndSuspend(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.AutoSync = ptr.To(false) })
	// autoSync false: even the first revision waits.
	g.Eventually(func(g Gomega) *gitsyncv1.SyncInfo { return f.get(g, "app").Status.Sync }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha}))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "a")).To(BeFalse())

	request := func(value string) {
		f.edit(g, "app", func(a *gitsyncv1.Application) {
			a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
		})
	}
	request("1")
	f.waitApplied("app", sha)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))

	sha2 := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("a", "2")})
	g.Eventually(func(g Gomega) *gitsyncv1.SyncInfo { return f.get(g, "app").Status.Sync }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha2}))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))
	// The newest revision is not applied: Ready is False (AwaitingSync), naming both.
	ready := apimeta.FindStatusCondition(f.get(g, "app").Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(gitsyncv1.AwaitingSyncReason))
	g.Expect(ready.Message).To(And(ContainSubstring(sha2), ContainSubstring("applied revision main@sha1:"+sha)))

	// Suspended: a sync request does nothing.
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Suspend = true })
	request("2")
	g.Consistently(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("1"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Suspend = false })
	request("3")
	f.waitApplied("app", sha2)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("2"))
}

func TestApplicationDependsOn(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"base/cm.yaml": configMapYAML("base", "1"),
		"app/cm.yaml":  configMapYAML("dependent", "1"),
	})
	f.app("dependent", func(a *gitsyncv1.Application) {
		a.Spec.Path = "app"
		a.Spec.DependsOn = []gitsyncv1.DependencyReference{{Name: "base"}}
	})
	msg := f.waitNotReady("dependent", gitsyncv1.DependencyNotReadyReason)
	g.Expect(msg).To(ContainSubstring("base"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "dependent")).To(BeFalse())

	f.app("base", func(a *gitsyncv1.Application) { a.Spec.Path = "base" })
	f.waitApplied("base", sha)
	f.waitApplied("dependent", sha)
}

func TestApplicationTargetNamespace(t *testing.T) {
	g := NewWithT(t)
	target := env.Namespace(t)
	f, _ := newAppFixture(t, map[string]string{"README": "x"})
	sha := f.repo.Commit("main", "objects", map[string]string{
		"plain.yaml": configMapYAML("plain", "1"),
		// A namespace written in Git is kept.
		"explicit.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: explicit\n  namespace: " + f.ns + "\n",
		"role.yaml":     "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: gitsync-test-" + target + "\nrules: []\n",
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.TargetNamespace = target })
	f.waitApplied("app", sha)
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "plain"}, &corev1.ConfigMap{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "explicit"}, &corev1.ConfigMap{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "gitsync-test-" + target}, &rbacv1.ClusterRole{})).To(Succeed())
}

func TestApplicationWaitsForHealth(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"deploy.yaml": deploymentYAML})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.Wait = true
		a.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	// No kubelet: the Deployment never becomes available by itself.
	msg := f.waitNotReady("app", gitsyncv1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("web"))
	// Conditions and the rest of status are separate patches: wait for both.
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Health).NotTo(BeNil())
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusProgressing))
		g.Expect(app.Status.LastAppliedRevision).To(BeEmpty())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())

	// A controller reports the rollout done: the retry finds it healthy.
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, deploy)).To(Succeed())
	deploy.Status = appsv1.DeploymentStatus{
		ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	g.Expect(env.Client.Status().Update(context.Background(), deploy)).To(Succeed())
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))
	g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.HealthyCondition)).To(BeTrue())
}

// deploymentYAML is the web Deployment of the drift and wait tests.
var deploymentYAML = manifests.Deployment("nginx:1.27")
