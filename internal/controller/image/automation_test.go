package image_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/imagereg"
)

// deployment is a workload as Flux's image automation guide marks it.
func deployment(image, ns string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: %s:1.0.0 # {"$imagepolicy": "%s:app"}
`, image, ns)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=true", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestTagPushedBecomesACommitThatIsApplied: a new tag within the range becomes one
// commit changing the marked field only, and the Application applies it; a tag outside
// the range changes nothing.
func TestTagPushedBecomesACommitThatIsApplied(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	reg := imagereg.New(t, "", "")
	image := reg.Image("team/app")
	reg.Push(t, "team/app", "1.0.0")
	srv := gittest.NewServer(t, gittest.Options{Username: "git", Password: "pw"})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "initial", map[string]string{"deploy/app.yaml": deployment(image, ns), "README.md": "fleet\n"})
	initial := repo.Head("main")

	create(t,
		secret(ns, "git-creds", map[string]string{"username": "git", "password": "pw"}),
		&gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}, Spec: gitsyncv1.GitRepositorySpec{
			URL: srv.HTTPURL("fleet"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}, SecretRef: &gitsyncv1.LocalObjectReference{Name: "git-creds"}}},
		&gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "fleet"}, Path: "./deploy"}},
		&gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ImageRepositorySpec{
			Image: image, Insecure: true}},
		&gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ImagePolicySpec{
			ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "app"},
			Policy:             gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: ">=1.0.0 <2.0.0"}}}},
		&gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}, Spec: gitsyncv1.ImageUpdateAutomationSpec{
			SourceRef: gitsyncv1.ImageUpdateSourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "fleet"},
			GitSpec: gitsyncv1.ImageUpdateGitSpec{
				Checkout: &gitsyncv1.GitCheckoutSpec{Reference: gitsyncv1.GitRepositoryRef{Branch: "main"}},
				Commit:   gitsyncv1.CommitSpec{Author: gitsyncv1.CommitUser{Name: "gitsync", Email: "bot@example.com"}},
				Push:     &gitsyncv1.PushSpec{Branch: "main"}},
			Update: &gitsyncv1.UpdateStrategy{Path: "./deploy", Strategy: gitsyncv1.UpdateStrategySetters}}},
	)
	deploy := &appsv1.Deployment{}
	imageOf := func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, deploy)).To(Succeed())
		return deploy.Spec.Template.Spec.Containers[0].Image
	}
	g.Eventually(imageOf, wait, poll).Should(Equal(image + ":1.0.0"))
	auto := &gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}}
	g.Eventually(func(g Gomega) string {
		return ready(g, auto, auto.GetConditions).Message
	}, wait, poll).Should(ContainSubstring("no change"))
	g.Expect(repo.Head("main")).To(Equal(initial), "nothing pushed while the tag in Git is the latest")

	// A tag outside the range, then one within it.
	reg.Push(t, "team/app", "2.0.0", "1.1.0")
	imageRepo := &gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	request(t, imageRepo)
	g.Eventually(imageOf, wait, poll).Should(Equal(image + ":1.1.0"))

	bare := repo.Path()
	head := repo.Head("main")
	g.Expect(git(t, bare, "rev-list", "--count", initial+".."+head)).To(Equal("1"), "one commit")
	g.Expect(git(t, bare, "show", head+":deploy/app.yaml")).To(Equal(strings.TrimSpace(
		strings.Replace(deployment(image, ns), ":1.0.0 #", ":1.1.0 #", 1))), "only the marked field changed")
	g.Expect(git(t, bare, "diff", "--name-only", initial, head)).To(Equal("deploy/app.yaml"))
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(auto), auto)).To(Succeed())
		return auto.Status.LastPushCommit
	}, wait, poll).Should(Equal(head))
	g.Expect(auto.Status.ObservedPolicies).To(HaveKeyWithValue("app", gitsyncv1.ImageRef{Name: image, Tag: "1.1.0"}))

	policy := &gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
	g.Expect(policy.Status.LatestRef.Tag).To(Equal("1.1.0"))
	g.Expect(policy.Status.ObservedPreviousRef.Tag).To(Equal("1.0.0"))
}

// TestCrossNamespaceReferencesRefused: a policy or an automation naming another
// namespace is refused (AccessDenied), as for other kinds.
func TestCrossNamespaceReferencesRefused(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	create(t,
		&gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: gitsyncv1.ImagePolicySpec{
			ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "app", Namespace: "elsewhere"},
			Policy:             gitsyncv1.ImagePolicyChoice{Alphabetical: &gitsyncv1.OrderPolicy{}}}},
		&gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"}, Spec: gitsyncv1.ImageUpdateAutomationSpec{
			SourceRef: gitsyncv1.ImageUpdateSourceReference{Name: "fleet", Namespace: "elsewhere"},
			GitSpec:   gitsyncv1.ImageUpdateGitSpec{Commit: gitsyncv1.CommitSpec{Author: gitsyncv1.CommitUser{Name: "a", Email: "a@b"}}}}},
	)
	p := &gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	u := &gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"}}
	g.Eventually(func(g Gomega) string { return ready(g, p, p.GetConditions).Reason }, wait, poll).Should(Equal(gitsyncv1.AccessDeniedReason))
	g.Eventually(func(g Gomega) string { return ready(g, u, u.GetConditions).Reason }, wait, poll).Should(Equal(gitsyncv1.AccessDeniedReason))
}
