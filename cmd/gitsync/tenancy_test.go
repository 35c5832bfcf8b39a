package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// startRun runs `gitsync run` with the flags against the test API server until the test ends.
func startRun(t *testing.T, flags ...string) {
	t.Helper()
	g := NewWithT(t)
	kubeconfig, err := env.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())
	// Several operators in one process (one per test): skip the controller name check.
	cmd := newRunCommandWith(&runOptions{operator: operator.Options{SkipNameValidation: true}})
	g.Expect(cmd.Flags().Parse(append([]string{
		"--kubeconfig", kubeconfigPath,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0",
		"--storage-path", t.TempDir(),
		"--deny-egress=",   // the Git server is on loopback
		"--min-interval=0", // the test polls every second
	}, flags...))).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd.SetContext(ctx)
	go func() { done <- cmd.RunE(cmd, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("gitsync run did not stop")
		}
	})
}

// tenantApp is a Git repository, its GitRepository repoNS/repoName and an Application
// ns/name of it.
func tenantApp(t *testing.T, ns, name, repoNS, repoName string, files map[string]string, mutate ...func(*gitsyncv1.Application)) (*gittest.Repo, string) {
	t.Helper()
	ctx := context.Background()
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	sha := repo.Commit("main", "initial", files)
	gitRepo := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: repoName, Namespace: repoNS},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Interval: &metav1.Duration{Duration: time.Second}},
	}
	if err := env.Client.Create(ctx, gitRepo); err != nil {
		t.Fatal(err)
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{
			Kind: gitsyncv1.GitRepositoryKind, Name: repoName, Namespace: repoNS,
		}},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	// Gone before this test's operator stops, so that the next test's does not sync it.
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, app)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(app), &gitsyncv1.Application{}))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	})
	return repo, sha
}

func readyOf(g Gomega, ns, name string) (*gitsyncv1.Application, *metav1.Condition) {
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app)).To(Succeed())
	ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	return app, ready
}

func cmYAML(name, ns, value string) string {
	meta := "  name: " + name + "\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" + meta + "data:\n  value: \"" + value + "\"\n"
}

// `gitsync run --default-service-account gitsync-tenant`: an Application without
// serviceAccountName applies with that service account's rights in its own namespace,
// and nothing more — no cluster-scoped object, no object in another namespace.
func TestRunDefaultServiceAccountLocksApplicationsDown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startRun(t, "--default-service-account", "gitsync-tenant")
	ns, other := env.Namespace(t), env.Namespace(t)
	user := "system:serviceaccount:" + ns + ":gitsync-tenant"
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-tenant", Namespace: ns}})).To(Succeed())
	repo, sha := tenantApp(t, ns, "app", ns, "repo", map[string]string{"cm.yaml": cmYAML("a", "", "1")})

	// No rights yet: refused, naming the identity.
	g.Eventually(func(g Gomega) {
		app, ready := readyOf(g, ns, "app")
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(gitsyncv1.ApplyFailedReason))
		g.Expect(ready.Message).To(ContainSubstring("as " + user))
		g.Expect(ready.Message).To(ContainSubstring("forbidden"))
		g.Expect(app.Status.ServiceAccount).To(Equal(user))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())

	// A namespace admin binds the tenant role (here: ConfigMaps only): applied.
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "gitsync-tenant", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gitsync-tenant", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gitsync-tenant"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gitsync-tenant", Namespace: ns}},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		app, ready := readyOf(g, ns, "app")
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		g.Expect(app.Status.ServiceAccount).To(Equal(user))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// A commit reaching for a cluster-scoped object and another namespace is refused whole.
	clusterRole := "gitsync-escalate-" + ns
	for name, extra := range map[string]string{
		"cluster": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + clusterRole + "\nrules: []\n",
		"other":   cmYAML("b", other, "1"),
	} {
		sha2 := repo.Commit("main", name, map[string]string{"extra.yaml": extra, "cm.yaml": cmYAML("a", "", "2")})
		g.Eventually(func(g Gomega) {
			app, ready := readyOf(g, ns, "app")
			g.Expect(app.Status.LastAttemptedRevision).To(Equal("main@sha1:" + sha2))
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Message).To(ContainSubstring("forbidden"))
			g.Expect(ready.Message).To(ContainSubstring(user))
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: clusterRole}, &rbacv1.ClusterRole{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "b"}, &corev1.ConfigMap{}))).To(BeTrue())
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("1"))
}

// `gitsync run --allow-cross-namespace-refs`: sourceRef and dependsOn may name another
// namespace (refused with AccessDenied without the flag: see the controller's tests).
func TestRunAllowCrossNamespaceRefs(t *testing.T) {
	g := NewWithT(t)
	startRun(t, "--allow-cross-namespace-refs")
	shared, ns := env.Namespace(t), env.Namespace(t)
	_, baseSHA := tenantApp(t, shared, "base", shared, "base", map[string]string{"cm.yaml": cmYAML("base", "", "1")})
	_, sha := tenantApp(t, ns, "borrow", shared, "borrowed", map[string]string{"cm.yaml": cmYAML("x", "", "1")},
		func(a *gitsyncv1.Application) {
			a.Spec.DependsOn = []gitsyncv1.DependencyReference{{Name: "base", Namespace: shared}}
		})
	for _, app := range []struct{ ns, name, sha string }{{shared, "base", baseSHA}, {ns, "borrow", sha}} {
		g.Eventually(func(g Gomega) {
			got, ready := readyOf(g, app.ns, app.name)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + app.sha))
			g.Expect(got.Status.ServiceAccount).To(Equal("operator"))
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "x"}, cm)).To(Succeed())
}
