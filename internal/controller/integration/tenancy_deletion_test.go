package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/application"
)

// A prune on deletion that keeps failing with an error other than Forbidden or
// Unauthorized (here an admission policy refuses to delete one ConfigMap: 422 Invalid)
// is retried a bounded number of times; then the object is orphaned with a Warning
// event naming it, and the Application goes away. Before, it retried forever.
func TestApplicationDeletionGivesUpOnAFailingDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("kept", "1"), "b.yaml": configMapYAML("gone", "1")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	app := f.waitApplied("app", sha)

	name := "refuse-delete-" + f.ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!(oldObject.metadata.name in ['kept', 'probe'])", Message: "kept by policy",
			}},
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
	// The policy takes a moment to be enforced: wait until it refuses a probe's deletion.
	g.Eventually(func() error {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: f.ns}}
		_ = env.Client.Create(ctx, probe)
		return env.Client.Delete(ctx, probe)
	}).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(MatchError(ContainSubstring("kept by policy")))

	start := time.Now()
	g.Expect(env.Client.Delete(ctx, app)).To(Succeed())
	// The suite's backoff is 100 ms doubling up to 1 s: eight attempts take about 5 s.
	g.Eventually(func(g Gomega) bool { return f.exists(g, &gitsyncv1.Application{}, "app") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	t.Logf("the Application went away after %v", time.Since(start).Round(100*time.Millisecond))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "kept")).To(BeTrue())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(BeFalse())

	var warnings, failures []string
	g.Eventually(func(g Gomega) []string {
		warnings, failures = nil, nil
		for _, e := range eventsFor(g, f.ns, "app") {
			switch {
			case e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.OrphanedReason:
				warnings = append(warnings, e.Note)
			case e.Type == corev1.EventTypeWarning && e.Reason == gitsyncv1.PruneFailedReason:
				failures = append(failures, e.Note)
			}
		}
		return warnings
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(SatisfyAll(
		ContainSubstring(fmt.Sprintf("failed %d times", application.MaxDeletionAttempts)),
		ContainSubstring("kept by policy"),
		ContainSubstring("ConfigMap/"+f.ns+"/kept orphaned"),
		Not(ContainSubstring("/gone")))))
	g.Expect(failures).NotTo(BeEmpty())
	g.Expect(strings.Join(failures, "\n")).To(ContainSubstring("kept by policy"))
}
