package fault

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Issue 34, item 2: cross-namespace renders by the ownership and prune checks. Tenant B
// names tenant A's GitRepository in an Application ("spy", path guessed: internal/) and
// asks, through the prune of its own Application, whether A's private repository
// renders a ConfigMap "probe" there: B's Application applied a "probe" of its own, then
// drops it from Git; if the prune check renders spy (from A's checkout), A's "probe"
// holds B's back. The shared operator refuses cross-namespace references (its default).
// Spy is refused with AccessDenied and never rendered: B's prune goes ahead, nothing of
// A's repository shows in B's statuses or in the operator's log, the operator stays up,
// and A's Application keeps syncing.
func TestRefusedReferenceIsNoOracle(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	before := sharedState()

	// Tenant A: a private repository with internal/probe.yaml.
	token := "tenant-a-" + rand.String(12)
	aFiles := smallRevision("a", "one").files()
	aFiles["internal/probe.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  token: " + token + "\n"
	a, aSHA := newFixture(t, aFiles, time.Second)
	a.waitApplied(aSHA, time.Minute)

	// Tenant B: its own Application applies "probe" too.
	bRevision := desired{configMaps: map[string]map[string]string{"x": {"k": "v"}, "probe": {"mine": "yes"}}}
	b, bSHA := newFixture(t, bRevision.files(), time.Second)
	b.waitApplied(bSHA, time.Minute)
	spy := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "spy", Namespace: b.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: repoName, Namespace: a.ns},
			Path:      "internal",
		},
	}
	g.Expect(env.Client.Create(ctx, spy)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), spy) })
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(spy), spy)).To(Succeed())
		cond := apimeta.FindStatusCondition(spy.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(gitsyncv1.AccessDeniedReason), cond.Message)
	}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed())

	// The question: B drops its "probe" from Git. Only a render of A's repository for
	// spy could claim the object and hold the prune back.
	delete(bRevision.configMaps, "probe")
	bSHA = b.repo.Commit("main", "probe leaves", bRevision.files())
	b.waitApplied(bSHA, time.Minute)
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "probe"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(30*time.Second).WithPolling(pollInterval).Should(BeTrue(),
		"B's probe was not pruned: a render of tenant A's repository claimed it")

	// Nothing of A's repository reached B: spy attempted no revision and holds no
	// inventory, no condition of B's names A's file or value, and the operator did not
	// render spy (no prune was held back for it, no build of it was logged).
	apps := &gitsyncv1.ApplicationList{}
	g.Expect(env.Client.List(ctx, apps, client.InNamespace(b.ns))).To(Succeed())
	for _, app := range apps.Items {
		for _, c := range app.Status.Conditions {
			g.Expect(c.Message).NotTo(ContainSubstring(token), "%s: %s", app.Name, c.Type)
			g.Expect(c.Message).NotTo(ContainSubstring("probe.yaml"), "%s: %s", app.Name, c.Type)
		}
		if app.Name == spy.Name {
			g.Expect(app.Status.LastAttemptedRevision).To(BeEmpty())
			g.Expect(inventoryIDs(&app)).To(BeEmpty())
		}
	}
	g.Expect(sharedLogLines(g, b.ns, "spy", "not pruning while another Application")).To(BeEmpty())
	g.Expect(sharedLogLines(g, token)).To(BeEmpty())

	// Tenant A keeps syncing; the operator was never restarted.
	aFiles = smallRevision("a", "one", "two").files()
	aSHA = a.repo.Commit("main", "a's next revision", aFiles)
	a.waitApplied(aSHA, 20*time.Second)
	before.expectAlive(g)
}

// Issue 34, item 2: CEL health checks without a cost limit. A tenant's
// spec.healthChecks (its own to write) judge its ConfigMaps with expressions that would
// pin a worker: a nested .all() over the object's data, a comprehension bomb over
// literal lists, a string repeated inside a comprehension. Each makes that Application
// Ready=False HealthCheckInvalid naming the cost limit. The operator stays up, another
// namespace's Application keeps syncing, and an ordinary check still judges the
// objects. (A check refused only on the object it judges, estimated with that object's
// sizes, is internal/celhealth's TestEvaluateRefusesWhatWouldCostTooMuch.)
func TestCELHealthCheckBombs(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	before := sharedState()

	other, otherSHA := newFixture(t, smallRevision("other", "one").files(), time.Second)
	other.waitApplied(otherSHA, time.Minute)

	f, sha := newFixture(t, smallRevision("bombs", "one", "two").files(), time.Second)
	f.waitApplied(sha, time.Minute)

	literal := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	setCheck := func(current string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			app := f.app(g)
			base := client.MergeFrom(app.DeepCopy())
			app.Spec.HealthChecks = []gitsyncv1.HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: current}}
			g.Expect(env.Client.Patch(ctx, app, base)).To(Succeed())
		}).WithTimeout(10 * time.Second).WithPolling(pollInterval).Should(Succeed())
	}
	for i, bomb := range []string{
		"data.all(k, data.all(j, data[k] + data[j] != ''))",
		literal(100) + ".all(a, " + literal(100) + ".all(b, " + literal(100) + ".all(c, a + b + c >= 0)))",
		"data.all(k, (" + strings.Repeat("data[k] + ", 30) + "data[k]).size() > 0)",
	} {
		setCheck(bomb)
		var cond *metav1.Condition
		g.Eventually(func(g Gomega) {
			app := f.app(g)
			g.Expect(app.Status.ObservedGeneration).To(Equal(app.Generation))
			cond = apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(gitsyncv1.HealthCheckInvalidReason), cond.Message)
		}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed(), "bomb %d", i)
		g.Expect(cond.Message).To(ContainSubstring("cost limit"), "bomb %d", i)
		t.Logf("bomb %d: %s", i, cond.Message)

		// Meanwhile the other tenant's new revisions are applied.
		otherSHA = other.repo.Commit("main", fmt.Sprint("revision ", i), smallRevision("other", fmt.Sprint("r", i)).files())
		other.waitApplied(otherSHA, 20*time.Second)
	}

	// An ordinary check judges the objects again.
	setCheck("has(self.data)")
	f.waitApplied(sha, time.Minute)
	g.Eventually(func(g Gomega) string {
		app := f.app(g)
		g.Expect(app.Status.Health).NotTo(BeNil())
		return app.Status.Health.Status
	}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Equal(gitsyncv1.HealthStatusHealthy))

	otherSHA = other.repo.Commit("main", "after the bombs", smallRevision("other", "after").files())
	other.waitApplied(otherSHA, 20*time.Second)
	before.expectAlive(g)
}
