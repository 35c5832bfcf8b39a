package integration

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// setValue changes a ConfigMap's data.value as a person would (kubectl edit).
func (f *appFixture) setValue(g Gomega, name, value string) {
	cm := f.configMap(g, name)
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = value
	g.Expect(env.Client.Patch(context.Background(), cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// A correction computed for revision 1 while a sync of revision 2 is under way never
// writes revision 1's object over revision 2's: the sync waits for the correction (or
// the correction for the sync) and the object ends at revision 2's value. (A person
// deletes the object; the sync's re-creation makes no watch event that could repair a
// stale correction afterwards.)
func TestDriftCorrectionNeverWritesAStaleRevision(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app")
	f.waitApplied("app", sha)

	var once sync.Once
	var sha2 atomic.Value
	hook := func(app types.NamespacedName, subject string) {
		if app.Namespace != f.ns {
			return
		}
		once.Do(func() {
			// Between the comparison (against revision 1) and the correction, revision 2
			// is committed and its sync reaches the apply...
			next := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("a", "2")})
			sha2.Store(next)
			for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				app := &gitsyncv1.Application{}
				if env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "app"}, app) != nil {
					continue
				}
				// Written with the progress patch just before the apply.
				if app.Status.LastAttemptedRevision == "main@sha1:"+next {
					break
				}
			}
			// ... and finishes, if nothing holds it back.
			for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				app := &gitsyncv1.Application{}
				if env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "app"}, app) == nil &&
					app.Status.LastAppliedRevision == "main@sha1:"+next {
					break
				}
			}
		})
	}
	driftReconciler.BeforeCorrect.Store(&hook)
	t.Cleanup(func() { driftReconciler.BeforeCorrect.Store(nil) })

	g.Expect(env.Client.Delete(context.Background(), f.configMap(g, "a"))).To(Succeed())
	g.Eventually(func() any { return sha2.Load() }).WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	f.waitApplied("app", sha2.Load().(string))
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("2"))
	g.Consistently(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(pollInterval).Should(Equal("2"))
}

// After a restart (no desired state in memory), drift is corrected against the last
// applied revision even though the newest revision fails to build.
func TestDriftProtectionIsRestoredFromTheLastAppliedRevision(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app")
	f.waitApplied("app", sha)
	key := types.NamespacedName{Namespace: f.ns, Name: "app"}

	// What a restart loses: the desired state held in memory.
	driftReconciler.Desired.Forget(context.Background(), key)
	g.Expect(driftReconciler.Desired.Tracked(key)).To(BeFalse())
	f.repo.Commit("main", "broken", map[string]string{"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n"})
	f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	g.Eventually(func() bool { return driftReconciler.Desired.Tracked(key) }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

	f.setValue(g, "a", "edited")
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))
	g.Expect(f.get(g, "app").Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
}

// A missing checkout makes the Application ask its source to fetch it once per
// revision, not at every retry.
func TestMissingCheckoutAsksTheSourceOnce(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app")
	f.waitApplied("app", sha)

	// The source stops (so the checkout is not fetched back), then the checkout goes.
	editRepo(g, f.ns, "repo", func(r *gitsyncv1.GitRepository) { r.Spec.Suspend = true })
	fetcher, err := source.NewFetcher(storagePath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.RemoveAll(fetcher.CheckoutDir(sourceid.RepositoryKey(getRepo(g, f.ns, "repo")), sha, nil))).To(Succeed())
	before := getRepo(g, f.ns, "repo").Annotations[gitsyncv1.RequestedAtAnnotation]

	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "sync"}
	})
	f.waitNotReady("app", gitsyncv1.ArtifactNotReadyReason)
	asked := map[string]bool{}
	deadline := time.Now().Add(4 * time.Second) // the suite retries every 300ms
	for time.Now().Before(deadline) {
		if v := getRepo(g, f.ns, "repo").Annotations[gitsyncv1.RequestedAtAnnotation]; v != before {
			asked[v] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Expect(asked).To(HaveLen(1))
}

// A failing drift check (here: an admission policy refuses the dry-run of one object) is
// retried with backoff, not every second.
func TestDriftCheckErrorsAreNotRetriedEverySecond(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("a", "1")})
	f.app("app")
	f.waitApplied("app", sha)
	key := types.NamespacedName{Namespace: f.ns, Name: "app"}
	ref := drift.ObjectRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: f.ns, Name: "a"}

	name := "refuse-dry-run-" + f.ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "!(request.dryRun == true && object.metadata.name == 'a')", Message: "no dry-run"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.ns},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, policy)
	})
	failures := func() int { return driftReconciler.Failures(ref) }
	// The policy takes a moment to be enforced: edit until a check fails.
	g.Eventually(func(g Gomega) int {
		f.setValue(g, "a", "edited-"+time.Now().Format(time.RFC3339Nano))
		time.Sleep(300 * time.Millisecond)
		return failures()
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeNumerically(">=", 1))
	first := failures()
	driftReconciler.OnEvent(drift.Event{Owner: key, Object: ref})
	time.Sleep(5 * time.Second)
	// 1s, 2s, 4s: at most 2 more checks in 5s (every second: 5).
	g.Expect(failures() - first).To(BeNumerically("<=", 3))

	// Once the check can run again, the drift is corrected.
	g.Expect(env.Client.Delete(ctx, binding)).To(Succeed())
	g.Eventually(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("1"))
}
