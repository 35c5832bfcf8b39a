package sources

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

const tenantAccount = "gitsync-tenant"

// grantSecret lets the tenant account of ns get the Secret name (and nothing else).
func grantSecret(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{name}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: tenantAccount}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer learns of the binding from its own watch: wait until it
	// answers yes, so a test's first check does not meet the authorizer before the binding.
	access := NewSecretAccess(env.Client, tenantAccount, true)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return access.Check(ctx, ns, name) == nil, nil
	}); err != nil {
		t.Fatalf("the API server never granted Secret %s/%s to %s: %v", ns, name, tenantAccount, access.Check(ctx, ns, name))
	}
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestSecretAccessAsksTheAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	createSecret(t, ns, "mine", map[string]string{"password": "p"})
	createSecret(t, ns, "admins", map[string]string{"password": "q"})
	grantSecret(t, ns, "mine")
	a := NewSecretAccess(env.Client, tenantAccount, true)

	if err := a.Check(ctx, ns, "mine", ""); err != nil {
		t.Fatalf("the granted Secret: %v", err)
	}
	if err := a.Check(ctx, ns, "mine", "admins"); !errors.Is(err, ErrSecretAccessDenied) {
		t.Fatalf("a Secret the tenant may not get: got %v, want ErrSecretAccessDenied", err)
	}
	// The same name in another namespace is another tenant's.
	other := env.Namespace(t)
	if err := a.Check(ctx, other, "mine"); !errors.Is(err, ErrSecretAccessDenied) {
		t.Fatalf("another namespace: got %v, want ErrSecretAccessDenied", err)
	}
	// A GitRepository's credentials: its spec.secretRef.
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://git.example/r.git", SecretRef: &gitsyncv1.LocalObjectReference{Name: "admins"}}}
	if err := a.CheckGitRepository(ctx, repo); !errors.Is(err, ErrSecretAccessDenied) {
		t.Fatalf("a GitRepository naming a Secret the tenant may not get: got %v", err)
	}
	repo.Spec.SecretRef.Name = "mine"
	if err := a.CheckGitRepository(ctx, repo); err != nil {
		t.Fatalf("a GitRepository naming the granted Secret: %v", err)
	}
	// Off (no --default-service-account, or --check-secret-access=false): nothing checked.
	if off := NewSecretAccess(env.Client, "", true); off != nil || off.Check(ctx, ns, "admins") != nil {
		t.Fatal("without a tenant account the check must be off")
	}
	if off := NewSecretAccess(env.Client, tenantAccount, false); off != nil {
		t.Fatal("--check-secret-access=false must turn the check off")
	}
}

// TestHelmRepositorySecretRefNeedsTheTenantsRight is the attack: a tenant who may create
// HelmRepositories but not read the namespace's Secrets names one as spec.secretRef and
// points the repository at its own server, which would receive the Secret's values as
// basic-auth credentials.
func TestHelmRepositorySecretRefNeedsTheTenantsRight(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	createSecret(t, ns, "deploy-creds", map[string]string{"username": "robot", "password": "s3cr3t-of-the-admin"})

	var mu sync.Mutex
	var seen []string // the passwords the attacker's server received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, p, ok := r.BasicAuth(); ok {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		}
		_, _ = w.Write([]byte("apiVersion: v1\nentries: {}\n"))
	}))
	defer srv.Close()

	repo := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steal"},
		Spec: gitsyncv1.HelmRepositorySpec{URL: srv.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "deploy-creds"}}}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	charts, err := chartrepo.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &HelmRepositoryReconciler{Client: env.Client, APIReader: env.Client, Charts: charts, Recorder: discard{},
		SecretAccess: NewSecretAccess(env.Client, tenantAccount, true)}
	key := types.NamespacedName{Namespace: ns, Name: "steal"}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err == nil {
		t.Fatal("reconcile succeeded with a Secret the tenant may not read")
	}
	got := &gitsyncv1.HelmRepository{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(got, gitsyncv1.ReadyCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != gitsyncv1.AccessDeniedReason {
		t.Fatalf("Ready = %+v, want False/%s", c, gitsyncv1.AccessDeniedReason)
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Fatalf("the repository's server received credentials %q", seen)
	}
	mu.Unlock()

	// Once the namespace's admin grants the tenant that Secret, the repository uses it.
	grantSecret(t, ns, "deploy-creds")
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatalf("reconcile after the grant: %v", err)
	}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if !conditions.IsTrue(got, gitsyncv1.ReadyCondition) {
		t.Fatalf("Ready = %+v after the grant", conditions.Get(got, gitsyncv1.ReadyCondition))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "s3cr3t-of-the-admin" {
		t.Fatalf("after the grant the server received %q, want the Secret's password", seen)
	}
}

// discard is an event recorder that drops events (events are not what these tests judge).
type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

func (discard) AnnotatedEventf(runtime.Object, runtime.Object, map[string]string, string, string, string, string, ...interface{}) {
}

// TestGitRepositorySecretRefNeedsTheTenantsRight is the same attack through a
// GitRepository: its URL is the tenant's own server, its secretRef a Secret of the
// namespace the tenant may not read; the operator reads no credential for it and dials
// nothing until the namespace's admin grants that Secret.
func TestGitRepositorySecretRefNeedsTheTenantsRight(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	createSecret(t, ns, "deploy-creds", map[string]string{"username": "robot", "password": "s3cr3t-of-the-admin"})

	var mu sync.Mutex
	var seen []string // the passwords the attacker's server received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, p, ok := r.BasicAuth(); ok {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()

	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steal"},
		Spec: gitsyncv1.GitRepositorySpec{URL: srv.URL + "/app.git", SecretRef: &gitsyncv1.LocalObjectReference{Name: "deploy-creds"}}}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	fetcher, err := source.NewFetcherWithOptions(t.TempDir(), source.FetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &GitRepositoryReconciler{Client: env.Client, APIReader: env.Client, Fetcher: fetcher, Recorder: discard{},
		SecretAccess: NewSecretAccess(env.Client, tenantAccount, true)}
	key := types.NamespacedName{Namespace: ns, Name: "steal"}
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	got := &gitsyncv1.GitRepository{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(got, gitsyncv1.ReadyCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != gitsyncv1.AccessDeniedReason {
		t.Fatalf("Ready = %+v, want False/%s", c, gitsyncv1.AccessDeniedReason)
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Fatalf("the repository's server received credentials %q", seen)
	}
	mu.Unlock()

	// Once the tenant may get the Secret, the fetch uses it (the server refuses it: the
	// point is that it was sent).
	grantSecret(t, ns, "deploy-creds")
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "s3cr3t-of-the-admin" {
		t.Fatalf("after the grant the server received %q, want the Secret's password", seen)
	}
}

// TestGitRepositoryVerifySecretNeedsTheTenantsRight: in tenant mode the Secret that
// spec.verify names is read only when the namespace's account may get it.
func TestGitRepositoryVerifySecretNeedsTheTenantsRight(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	createSecret(t, ns, "admin-keys", map[string]string{"allowed_signers": "admin@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"})
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "verified"},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://git.example.invalid/app.git",
			Verify: &gitsyncv1.GitRepositoryVerification{Mode: gitsyncv1.VerifyModeHEAD, SecretRef: gitsyncv1.LocalObjectReference{Name: "admin-keys"}}}}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	fetcher, err := source.NewFetcherWithOptions(t.TempDir(), source.FetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &GitRepositoryReconciler{Client: env.Client, APIReader: env.Client, Fetcher: fetcher, Recorder: discard{},
		SecretAccess: NewSecretAccess(env.Client, tenantAccount, true)}
	key := types.NamespacedName{Namespace: ns, Name: "verified"}
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	got := &gitsyncv1.GitRepository{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	c := conditions.Get(got, gitsyncv1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != gitsyncv1.AccessDeniedReason || !strings.Contains(c.Message, "admin-keys") {
		t.Fatalf("Ready = %+v, want False/%s naming the Secret", c, gitsyncv1.AccessDeniedReason)
	}
}
