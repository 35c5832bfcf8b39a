package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

func jobYAML(nameKey, name, annotations string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  %s: %s
  annotations: {%s}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: example.com/run:1}]
`, nameKey, name, annotations)
}

func orderedDeploymentYAML(name, annotations string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  annotations: {%s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: app, image: example.com/app:1}]}
`, name, annotations)
}

// hookJobs lists the Jobs an Application created as hooks.
func (f *appFixture) hookJobs(g Gomega, app string) []batchv1.Job {
	list := &batchv1.JobList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{gitsyncv1.HookApplicationLabel: app})).To(Succeed())
	return list.Items
}

// waitHookJob waits for exactly one hook Job whose name starts with prefix, and returns it.
func (f *appFixture) waitHookJob(app, prefix string) batchv1.Job {
	f.t.Helper()
	var found batchv1.Job
	NewWithT(f.t).Eventually(func(g Gomega) {
		var matching []batchv1.Job
		for _, j := range f.hookJobs(g, app) {
			if len(j.Name) >= len(prefix) && j.Name[:len(prefix)] == prefix && j.DeletionTimestamp == nil {
				matching = append(matching, j)
			}
		}
		g.Expect(matching).To(HaveLen(1))
		found = matching[0]
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return found
}

func TestApplicationHooksAndWaves(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{
		"migrate.yaml": jobYAML("generateName", "migrate-", `gitsync.dev/hook: PreSync, gitsync.dev/hook-delete-policy: HookSucceeded`),
		"db.yaml":      orderedDeploymentYAML("db", `argocd.argoproj.io/sync-wave: "0"`),
		"web.yaml":     orderedDeploymentYAML("web", `gitsync.dev/sync-wave: "1"`),
		"smoke.yaml":   jobYAML("name", "smoke", `argocd.argoproj.io/hook: PostSync`),
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	defer func() {
		if t.Failed() {
			t.Logf("application status: %+v", f.get(g, "app").Status)
		}
	}()

	// PreSync first: the main set waits for it, and the condition says why.
	migrate := f.waitHookJob("app", "migrate-")
	g.Eventually(func(g Gomega) {
		conds := f.get(g, "app").Status.Conditions
		rec := apimeta.FindStatusCondition(conds, gitsyncv1.ReconcilingCondition)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Message).To(ContainSubstring("PreSync: waiting for Job/migrate-"))
		ready := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown), "Ready says what the sync waits for, as kubectl get shows it")
		g.Expect(ready.Message).To(Equal(rec.Message))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) bool { return f.exists(g, &appsv1.Deployment{}, "db") }, time.Second, 100*time.Millisecond).Should(BeFalse())
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, migrate.Name, true)).To(Succeed())

	// Wave 0, then wave 1 once wave 0 is healthy.
	g.Eventually(func(g Gomega) bool { return f.exists(g, &appsv1.Deployment{}, "db") }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Consistently(func(g Gomega) bool { return f.exists(g, &appsv1.Deployment{}, "web") }, time.Second, 100*time.Millisecond).Should(BeFalse())
	g.Expect(kubelet.MakeAvailable(ctx, env.Client, f.ns, "db")).To(Succeed())
	g.Eventually(func(g Gomega) bool { return f.exists(g, &appsv1.Deployment{}, "web") }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

	// PostSync only once everything is healthy.
	g.Consistently(func(g Gomega) bool { return f.exists(g, &batchv1.Job{}, "smoke") }, time.Second, 100*time.Millisecond).Should(BeFalse())
	g.Expect(kubelet.MakeAvailable(ctx, env.Client, f.ns, "web")).To(Succeed())
	f.waitHookJob("app", "smoke")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, "smoke", true)).To(Succeed())

	app := f.waitApplied("app", sha)
	g.Expect(app.Status.HooksRevision).To(Equal("main@sha1:" + sha))
	g.Expect(app.Status.Hooks).To(HaveLen(2))
	g.Expect(app.Status.Hooks[0].Phase).To(Equal(gitsyncv1.HookPreSync))
	g.Expect(app.Status.Hooks[0].Result).To(Equal("Succeeded"))
	g.Expect(app.Status.Hooks[1].Name).To(Equal("smoke"))
	g.Expect(app.Status.Inventory.Entries).To(HaveLen(2), "hooks are not in the inventory")
	g.Eventually(func(g Gomega) int { return len(f.hookJobs(g, "app")) }).WithTimeout(waitTimeout).Should(Equal(1), "HookSucceeded deleted migrate; smoke stays until the next run")

	// A hook is not drift: a change to it is not reported, and a resync does not run it again.
	smoke := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "smoke"}, smoke)).To(Succeed())
	smokeUID := smoke.UID
	patch := client.MergeFrom(smoke.DeepCopy())
	smoke.Annotations["edited"] = "by hand"
	g.Expect(env.Client.Patch(ctx, smoke, patch)).To(Succeed())
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Interval = &metav1.Duration{Duration: time.Hour} })
	g.Eventually(func(g Gomega) int64 { a := f.get(g, "app"); return a.Status.ObservedGeneration }).WithTimeout(waitTimeout).Should(Equal(int64(2)))
	g.Consistently(func(g Gomega) {
		g.Expect(f.get(g, "app").Status.Drift).To(BeEmpty())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "smoke"}, smoke)).To(Succeed())
		g.Expect(smoke.UID).To(Equal(smokeUID), "the PostSync hook did not run again")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// A plain sync request does not run the hooks again; one that asks for them does.
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "plain"}
	})
	g.Eventually(func(g Gomega) string { return f.get(g, "app").Status.LastHandledReconcileAt }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("plain"))
	g.Consistently(func(g Gomega) int { return len(f.hookJobs(g, "app")) }, time.Second, 100*time.Millisecond).
		Should(Equal(1), "only smoke, left by the first run")
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "again", gitsyncv1.RunHooksAnnotation: "again"}
	})
	f.waitHookJob("app", "migrate-")
}

func TestApplicationFailedPreSyncHook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, _ := newAppFixture(t, map[string]string{
		"migrate.yaml": jobYAML("name", "migrate", `helm.sh/hook: pre-install`),
		"cm.yaml":      configMapYAML("main", "1"),
		"fail.yaml":    jobYAML("name", "on-fail", `gitsync.dev/hook: SyncFail`),
	})
	f.app("app")
	f.waitHookJob("app", "migrate")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, "migrate", false)).To(Succeed())

	f.waitHookJob("app", "on-fail")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, "on-fail", true)).To(Succeed())
	msg := f.waitNotReady("app", gitsyncv1.HookFailedReason)
	g.Expect(msg).To(ContainSubstring("PreSync hook Job/migrate failed"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "main")).To(BeFalse(), "nothing of the main set is applied")
	g.Expect(eventsFor(g, f.ns, "app")).To(ContainElement(WithTransform(func(e eventsv1.Event) string { return e.Reason }, Equal(gitsyncv1.HookFailedReason))))
}

func TestApplicationHealthChecks(t *testing.T) {
	g := NewWithT(t)
	f, _ := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("main", "1")})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.HealthChecks = []gitsyncv1.HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "data.value =="}}
	})
	msg := f.waitNotReady("app", gitsyncv1.HealthCheckInvalidReason)
	g.Expect(msg).To(ContainSubstring("spec.healthChecks[0] (ConfigMap) current"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "main")).To(BeFalse())

	// A valid expression decides the health of its kind.
	f.edit(g, "app", func(a *gitsyncv1.Application) {
		a.Spec.HealthChecks = []gitsyncv1.HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "data.value == '2'", Failed: "data.value == 'broken'"}}
	})
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Health).NotTo(BeNil())
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusProgressing), app.Status.Health.Message)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	f.repo.Commit("main", "value 2", map[string]string{"cm.yaml": configMapYAML("main", "2")})
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Health).NotTo(BeNil())
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy), app.Status.Health.Message)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestApplicationEditDuringWaveWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{
		"db.yaml": orderedDeploymentYAML("db", `gitsync.dev/sync-wave: "0"`),
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  annotations: {gitsync.dev/sync-wave: \"1\"}\ndata: {k: v}\n",
	})
	f.app("app")
	db := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) bool { return f.exists(g, db, "db") }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

	// A person edits the wave-0 Deployment while the sync waits for its health.
	db.Spec.Template.Spec.Containers[0].Image = "example.com/app:edited"
	g.Expect(env.Client.Update(ctx, db, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Consistently(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "after") }, time.Second, 100*time.Millisecond).Should(BeFalse(), "wave 1 still waits")

	g.Expect(kubelet.MakeAvailable(ctx, env.Client, f.ns, "db")).To(Succeed())
	f.waitApplied("app", sha)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "after")).To(BeTrue())
	// The edit is drift against the applied revision: it is put back.
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "db"}, db)).To(Succeed())
		return db.Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("example.com/app:1"))

	// And the drift watch holds afterwards: a new edit is reverted too.
	db.Spec.Template.Spec.Containers[0].Image = "example.com/app:again"
	g.Expect(env.Client.Update(ctx, db, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "db"}, db)).To(Succeed())
		return db.Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("example.com/app:1"))
}

func TestApplicationHooksAreNeverPruned(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"cm.yaml":   configMapYAML("main", "1"),
		"hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notice\n  annotations: {gitsync.dev/hook: PostSync}\ndata: {k: v}\n",
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.Inventory.Entries).To(ConsistOf(gitsyncv1.InventoryEntry{ID: f.ns + "_main__ConfigMap", V: "v1"}))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "notice")).To(BeTrue())

	sha = f.repo.Commit("main", "drop the hook", map[string]string{"cm.yaml": configMapYAML("main", "2")}, "hook.yaml")
	f.waitApplied("app", sha)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "notice")).To(BeTrue(), "a hook left in the cluster is not pruned")
}
