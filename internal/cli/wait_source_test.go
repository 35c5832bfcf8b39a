package cli

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// sourceReady is the GitRepository's Ready condition once it is False.
func sourceReady(g Gomega, ns, name string) *metav1.Condition {
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
	c := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	return c
}

// expectSourceFailure waits until the Application's Ready passes its failing source's own
// reason and message through.
func expectSourceFailure(g Gomega, ns, app, repo string) {
	g.Eventually(func(g Gomega) {
		src := sourceReady(g, ns, repo)
		a := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: app}, a)).To(Succeed())
		c := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(src.Reason))
		g.Expect(c.Message).To(Equal("source GitRepository " + ns + "/" + repo + ": " + src.Message))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// A new source that fails: its Application says why (the source's reason and message),
// not only that there is no artifact yet; `wait` ends with it.
func TestNewFailingSourcePassedThrough(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-repo", Namespace: f.ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: f.srv.HTTPURL("nope"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "bad-repo"}, Path: "./app",
		},
	})).To(Succeed())
	expectSourceFailure(g, f.ns, "other", "bad-repo")

	r := gitsync(t, "wait", "app", "other", "-n", f.ns, "--timeout", "1m")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("source GitRepository " + f.ns + "/bad-repo: "))
}

// A wrong URL on a GitRepository that worked: its Application shows the source's fetch
// failure, not that a checkout is missing from storage.
func TestWrongURLOnAWorkingSourcePassedThrough(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	ctx := context.Background()
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "app-repo"}, repo)).To(Succeed())
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.URL = f.srv.HTTPURL("nope")
	g.Expect(env.Client.Patch(ctx, repo, base)).To(Succeed())
	g.Eventually(func(g Gomega) { sourceReady(g, f.ns, "app-repo") }).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).NotTo(ContainSubstring("is not in storage"))
	expectSourceFailure(g, f.ns, "web", "app-repo")
}
