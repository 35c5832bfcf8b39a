package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

const staleRevision = "main@sha1:0000000000000000000000000000000000000000"

// markApp is the stand-in for the Application controller (the generated Applications are
// suspended: their Clusters do not exist): it reports app as synced at revision with
// health, at the Application's current generation, as a sync of that generation would.
func markApp(g Gomega, ns, name, revision, health string) {
	ctx := context.Background()
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Status.ObservedGeneration = app.Generation
	app.Status.LastAppliedRevision, app.Status.LastAttemptedRevision = revision, revision
	app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: revision}
	app.Status.Health = &gitsyncv1.HealthInfo{Status: health}
	ready := metav1.Condition{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: gitsyncv1.SucceededReason,
		Message: "applied " + revision, LastTransitionTime: metav1.Now(), ObservedGeneration: app.Generation}
	if health != gitsyncv1.HealthStatusHealthy {
		ready.Status, ready.Reason = metav1.ConditionFalse, gitsyncv1.HealthCheckFailedReason
	}
	app.Status.Conditions = []metav1.Condition{ready}
	g.Expect(env.Client.Status().Patch(ctx, app, base)).To(Succeed())
}

// held tells whether the set holds app back from a new revision (autoSync false).
func held(g Gomega, ns, name string) bool {
	app := generatedApps(g, ns, "rollout")[name]
	g.Expect(app.Name).To(Equal(name))
	return app.Spec.AutoSync != nil && !*app.Spec.AutoSync
}

func rolloutOf(g Gomega, ns string) gitsyncv1.RolloutStatus {
	s := getSet(g, ns, "rollout")
	g.Expect(s.Status.Rollout).NotTo(BeNil())
	return *s.Status.Rollout
}

// A RollingSync rollout of 3 steps over 6 Applications on 2 clusters: Applications
// Healthy at the OLD revision never advance a step (the status is read fresh and must
// name the new revision and generation); step 1 done at the new revision starts step 2;
// one Application of step 2 Degraded halts the rollout with a condition naming it, and
// step 3 never starts; a resume continues once it is fixed.
func TestApplicationSetRollingSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	sha := repo.Commit("main", "initial", map[string]string{"cm.yaml": configMapYAML("a", "1")})
	newGitRepository(t, ns, "repo", srv.HTTPURL("fleet"), nil, "")
	newCluster(t, ns, "east", "v1.37.1", nil)
	newCluster(t, ns, "west", "v1.37.1", nil)
	g.Eventually(func(g Gomega) *gitsyncv1.Artifact { return getRepo(g, ns, "repo").Status.Artifact }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	newRev := "main@sha1:" + sha

	var elements []apiextensionsv1.JSON
	for _, e := range []string{`{"app":"a","step":"1"}`, `{"app":"b","step":"2"}`, `{"app":"c","step":"3"}`} {
		elements = append(elements, apiextensionsv1.JSON{Raw: []byte(e)})
	}
	strategy := &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, HealthTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
	for _, s := range []string{"1", "2", "3"} {
		strategy.Steps = append(strategy.Steps, gitsyncv1.RollingSyncStep{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": s}}})
	}
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rollout", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{Matrix: &gitsyncv1.MatrixGenerator{Generators: []gitsyncv1.ApplicationSetBaseGenerator{
				{List: &gitsyncv1.ListGenerator{Elements: elements}},
				{Clusters: &gitsyncv1.ClustersGenerator{}},
			}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .app }}-{{ .name }}", Labels: map[string]string{"step": "{{ .step }}"}},
				Spec: gitsyncv1.ApplicationSpec{
					SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Cluster:   &gitsyncv1.ClusterReference{Name: "{{ .name }}"},
					Suspend:   true,
				},
			},
			Strategy: strategy,
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	all := []string{"a-east", "a-west", "b-east", "b-west", "c-east", "c-west"}
	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "rollout")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(all))
	g.Eventually(func(g Gomega) string { return rolloutOf(g, ns).Revision }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(newRev))

	// Every Application Synced and Healthy, but at the OLD revision: the rollout stays at step 1.
	g.Consistently(func(g Gomega) int32 {
		for _, n := range all {
			markApp(g, ns, n, staleRevision, gitsyncv1.HealthStatusHealthy)
		}
		return rolloutOf(g, ns).CurrentStep
	}).WithTimeout(3 * time.Second).WithPolling(300 * time.Millisecond).Should(BeZero())
	g.Expect(held(g, ns, "a-east") || held(g, ns, "a-west")).To(BeFalse(), "step 1 is released")
	for _, n := range all[2:] {
		g.Expect(held(g, ns, n)).To(BeTrue(), "%s of a later step is held", n)
	}

	// Step 1 Synced and Healthy at the new revision: step 2 starts, step 3 stays held.
	g.Eventually(func(g Gomega) int32 {
		markApp(g, ns, "a-east", newRev, gitsyncv1.HealthStatusHealthy)
		markApp(g, ns, "a-west", newRev, gitsyncv1.HealthStatusHealthy)
		return rolloutOf(g, ns).CurrentStep
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(int32(1)))
	g.Expect(held(g, ns, "b-east") || held(g, ns, "b-west")).To(BeFalse(), "step 2 is released")
	g.Expect(held(g, ns, "c-east") && held(g, ns, "c-west")).To(BeTrue())

	// b-east applies the new revision and is Degraded there: halted, named; step 3 never starts.
	g.Eventually(func(g Gomega) string {
		markApp(g, ns, "b-east", newRev, gitsyncv1.HealthStatusDegraded)
		markApp(g, ns, "b-west", newRev, gitsyncv1.HealthStatusHealthy)
		for _, c := range getSet(g, ns, "rollout").Status.Conditions {
			if c.Type == gitsyncv1.ReadyCondition && c.Status == metav1.ConditionFalse && c.Reason == gitsyncv1.RolloutHaltedReason {
				return c.Message
			}
		}
		return ""
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("Application b-east"))
	g.Consistently(func(g Gomega) bool {
		markApp(g, ns, "a-east", newRev, gitsyncv1.HealthStatusHealthy)
		markApp(g, ns, "b-west", newRev, gitsyncv1.HealthStatusHealthy)
		r := rolloutOf(g, ns)
		return r.CurrentStep == 1 && r.Steps[1].State == gitsyncv1.StepHalted && r.Steps[2].State == gitsyncv1.StepPending &&
			held(g, ns, "c-east") && held(g, ns, "c-west")
	}).WithTimeout(3 * time.Second).WithPolling(300 * time.Millisecond).Should(BeTrue())
	g.Eventually(func(g Gomega) []string {
		var reasons []string
		for _, e := range eventsFor(g, ns, "rollout") {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElements(
		"RolloutStepStarted", "RolloutStepCompleted", gitsyncv1.RolloutHaltedReason))

	// Fixed: the halt stays until a resume (gitsync resume appset); then step 3 starts,
	// and the rollout completes.
	g.Eventually(func(g Gomega) string {
		markApp(g, ns, "b-east", newRev, gitsyncv1.HealthStatusHealthy)
		return rolloutOf(g, ns).Steps[1].Applications[0].Status
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(gitsyncv1.RolloutAppDone))
	g.Expect(rolloutOf(g, ns).Halted).To(ContainSubstring("b-east"))
	s := getSet(g, ns, "rollout")
	base := client.MergeFrom(s.DeepCopy())
	s.Annotations = map[string]string{gitsyncv1.ResumeRolloutAnnotation: "1"}
	g.Expect(env.Client.Patch(ctx, s, base)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		for _, n := range []string{"b-east", "b-west"} {
			markApp(g, ns, n, newRev, gitsyncv1.HealthStatusHealthy)
		}
		return rolloutOf(g, ns).CurrentStep == 2 && !held(g, ns, "c-east") && !held(g, ns, "c-west")
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Eventually(func(g Gomega) string {
		for _, n := range []string{"c-east", "c-west"} {
			markApp(g, ns, n, newRev, gitsyncv1.HealthStatusHealthy)
		}
		for _, c := range getSet(g, ns, "rollout").Status.Conditions {
			if c.Type == gitsyncv1.ReadyCondition {
				return string(c.Status) + " " + c.Message
			}
		}
		return ""
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("True 6 Applications generated"))
	g.Expect(strings.Join(keysOf(generatedApps(g, ns, "rollout")), ",")).To(Equal(strings.Join(all, ",")))
}

// spec.rollback pins every generated Application at once; cleared, the source's revision
// rolls out again from step 1 (not all at once).
func TestApplicationSetRollback(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	sha := repo.Commit("main", "initial", map[string]string{"cm.yaml": configMapYAML("a", "1")})
	newGitRepository(t, ns, "repo", srv.HTTPURL("fleet"), nil, "")
	g.Eventually(func(g Gomega) *gitsyncv1.Artifact { return getRepo(g, ns, "repo").Status.Artifact }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	newRev := "main@sha1:" + sha
	var elements []apiextensionsv1.JSON
	for _, e := range []string{`{"app":"a","step":"1"}`, `{"app":"b","step":"2"}`} {
		elements = append(elements, apiextensionsv1.JSON{Raw: []byte(e)})
	}
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rollout", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				List: &gitsyncv1.ListGenerator{Elements: elements}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .app }}", Labels: map[string]string{"step": "{{ .step }}"}},
				Spec:     gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}, Suspend: true},
			},
			Strategy: &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy, Steps: []gitsyncv1.RollingSyncStep{
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "1"}}},
				{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"step": "2"}}},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		markApp(g, ns, "a", newRev, gitsyncv1.HealthStatusHealthy)
		markApp(g, ns, "b", newRev, gitsyncv1.HealthStatusHealthy)
		r := rolloutOf(g, ns)
		return r.Revision == newRev && r.CurrentStep == 2
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

	s := getSet(g, ns, "rollout")
	base := client.MergeFrom(s.DeepCopy())
	s.Spec.Rollback = staleRevision
	g.Expect(env.Client.Patch(ctx, s, base)).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		apps := generatedApps(g, ns, "rollout")
		return []string{apps["a"].Spec.PinnedRevision, apps["b"].Spec.PinnedRevision}
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{staleRevision, staleRevision}))

	// The rollback is applied (the stand-in reports the old revision); cleared, step 1 goes
	// first again: b waits.
	markApp(g, ns, "a", staleRevision, gitsyncv1.HealthStatusHealthy)
	markApp(g, ns, "b", staleRevision, gitsyncv1.HealthStatusHealthy)
	s = getSet(g, ns, "rollout")
	base = client.MergeFrom(s.DeepCopy())
	s.Spec.Rollback = ""
	g.Expect(env.Client.Patch(ctx, s, base)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		apps := generatedApps(g, ns, "rollout")
		a, b := apps["a"], apps["b"]
		return a.Spec.PinnedRevision == "" && b.Spec.PinnedRevision == "" && held(g, ns, "b") && !held(g, ns, "a")
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(rolloutOf(g, ns).CurrentStep).To(BeZero())
}
