package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// The suite's manager runs 4 Application workers.
const suiteWorkers = 4

// jobCreations counts the hook Jobs ever created in ns (by uid), from a watch started now.
func jobCreations(t *testing.T, ns string) func() int {
	t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := dc.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).Namespace(ns).
		Watch(ctx, metav1.ListOptions{LabelSelector: gitsyncv1.HookApplicationLabel})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[types.UID]bool{}
	go func() {
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Added {
				mu.Lock()
				seen[obj.GetUID()] = true
				mu.Unlock()
			}
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
}

// suspendAtEnd suspends the fixture's Application when the test ends (its waits stop).
func (f *appFixture) suspendAtEnd(name string) {
	f.t.Cleanup(func() {
		f.edit(NewWithT(f.t), name, func(a *gitsyncv1.Application) { a.Spec.Suspend = true })
	})
}

func (f *appFixture) readyMessage(g Gomega, name string) string {
	ready := apimeta.FindStatusCondition(f.get(g, name).Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	return ready.Message
}

// Tenant isolation, item 7: more tenants than workers, each with a sync that waits
// (a PreSync Job that never completes, or a wave whose Deployment never becomes
// healthy, under a timeout of 10 minutes), do not stop another tenant's sync: a sync
// waits by requeue, not in a worker. Each held hook Job is created once across the
// requeues; completing it lets its run apply the waves and the PostSync hook, and a
// Deployment that turns healthy lets the next wave apply.
func TestWaitingSyncsDoNotHoldWorkers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	long := func(a *gitsyncv1.Application) { a.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute} }
	hooked := map[string]string{
		"migrate.yaml": jobYAML("generateName", "migrate-", `gitsync.dev/hook: PreSync`),
		"first.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  annotations: {gitsync.dev/sync-wave: \"0\"}\ndata: {k: v}\n",
		"db.yaml":      orderedDeploymentYAML("db", `gitsync.dev/sync-wave: "1"`),
		"last.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: last\n  annotations: {gitsync.dev/sync-wave: \"2\"}\ndata: {k: v}\n",
		"smoke.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: smoke\n  annotations: {gitsync.dev/hook: PostSync}\ndata: {k: v}\n",
	}
	waves := map[string]string{
		"db.yaml":   orderedDeploymentYAML("db", `gitsync.dev/sync-wave: "0"`),
		"last.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: last\n  annotations: {gitsync.dev/sync-wave: \"1\"}\ndata: {k: v}\n",
	}

	var holders []*appFixture
	var creations []func() int
	for i := range suiteWorkers + 2 {
		files := hooked
		if i%2 == 1 {
			files = waves
		}
		f, _ := newAppFixture(t, files)
		if i%2 == 0 {
			creations = append(creations, jobCreations(t, f.ns))
		}
		f.app("app", long)
		f.suspendAtEnd("app")
		holders = append(holders, f)
	}
	// Every holder waits: for its hook, or for its wave 0.
	for i, f := range holders {
		want := "PreSync: waiting for Job/migrate-"
		if i%2 == 1 {
			want = "wave 0: waiting for Deployment/"
		}
		g.Eventually(func(g Gomega) string { return f.readyMessage(g, "app") }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring(want))
	}

	// Another tenant syncs within seconds.
	other, otherSHA := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("other", "1")})
	start := time.Now()
	other.app("app")
	other.waitApplied("app", otherSHA)
	g.Expect(time.Since(start)).To(BeNumerically("<", 15*time.Second))

	// The holders went on waiting meanwhile, through several requeues: one hook Job each.
	time.Sleep(6 * time.Second)
	for i, f := range holders {
		app := f.get(g, "app")
		g.Expect(app.Status.SyncProgress).NotTo(BeNil(), "holder %d waits", i)
		if i%2 == 0 {
			g.Expect(creations[i/2]()).To(Equal(1), "holder %d created its hook once", i)
			g.Expect(app.Status.Hooks).To(HaveLen(1))
			g.Expect(app.Status.Hooks[0].Result).To(Equal("Running"))
			g.Expect(f.exists(g, &corev1.ConfigMap{}, "first")).To(BeFalse(), "holder %d applied nothing", i)
		} else {
			g.Expect(app.Status.SyncProgress.AppliedWaves).To(Equal(1))
			g.Expect(f.exists(g, &corev1.ConfigMap{}, "last")).To(BeFalse(), "holder %d waits before wave 1", i)
		}
	}

	// The hook completes: its run applies wave 0 and 1, waits for db, then wave 2 and
	// the PostSync hook; the hook is not created again.
	f := holders[0]
	jobs := f.hookJobs(g, "app")
	g.Expect(jobs).To(HaveLen(1))
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, jobs[0].Name, true)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return f.exists(g, &appsv1.Deployment{}, "db") }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "first")).To(BeTrue())
	g.Expect(kubelet.MakeAvailable(ctx, env.Client, f.ns, "db")).To(Succeed())
	sha := f.repo.Head("main")
	app := f.waitApplied("app", sha)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "last")).To(BeTrue())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "smoke")).To(BeTrue(), "the PostSync hook ran")
	g.Expect(app.Status.Hooks).To(HaveLen(2))
	g.Expect(app.Status.Hooks[0].Result).To(Equal("Succeeded"))
	g.Expect(app.Status.Hooks[1].Phase).To(Equal(gitsyncv1.HookPostSync))
	g.Expect(app.Status.HooksRevision).To(Equal("main@sha1:" + sha))
	g.Expect(app.Status.SyncProgress).To(BeNil())
	g.Expect(app.Status.Inventory.Entries).To(HaveLen(3))
	g.Expect(app.Status.History[0].Created).To(Equal(3), "the history counts the objects of every reconcile of the run")
	g.Expect(creations[0]()).To(Equal(1))

	// The Deployment of a wave holder turns healthy: the next wave applies.
	f = holders[1]
	g.Expect(kubelet.MakeAvailable(ctx, env.Client, f.ns, "db")).To(Succeed())
	f.waitApplied("app", f.repo.Head("main"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "last")).To(BeTrue())
}

// The timeout of a sync that waits by requeue counts from the sync's start: a PreSync
// hook that never completes fails the revision after spec.timeout with the message of
// a sync that waited in its worker, and the SyncFail hook runs once.
func TestHookTimeoutSpansRequeues(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"forever.yaml": jobYAML("name", "forever", `gitsync.dev/hook: PreSync`),
		"fail.yaml":    jobYAML("generateName", "on-fail-", `gitsync.dev/hook: SyncFail`),
		"cm.yaml":      configMapYAML("main", "1"),
	})
	created := jobCreations(t, f.ns)
	start := time.Now()
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Timeout = &metav1.Duration{Duration: 6 * time.Second} })
	f.suspendAtEnd("app")

	// It waits by requeue (status.syncProgress) before the timeout.
	g.Eventually(func(g Gomega) *gitsyncv1.SyncProgress { return f.get(g, "app").Status.SyncProgress }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	// The SyncFail hook comes once the timeout is over; it completes.
	onFail := f.waitHookJob("app", "on-fail-")
	g.Expect(time.Since(start)).To(BeNumerically(">=", 6*time.Second))
	g.Expect(kubelet.FinishJob(context.Background(), env.Client, f.ns, onFail.Name, true)).To(Succeed())
	msg := f.waitNotReady("app", gitsyncv1.HookFailedReason)
	g.Expect(msg).To(HavePrefix(fmt.Sprintf("revision main@sha1:%s: PreSync hook Job/forever failed: timed out after 6s (", sha)))
	g.Expect(time.Since(start)).To(BeNumerically("<", 40*time.Second))
	app := f.get(g, "app")
	g.Expect(app.Status.SyncProgress).To(BeNil())
	g.Expect(app.Status.History).NotTo(BeEmpty())
	g.Expect(app.Status.History[0].Result).To(Equal(gitsyncv1.SyncResultFailed))
	g.Expect(app.Status.Hooks).To(HaveLen(2))
	g.Expect(app.Status.Hooks[1].Phase).To(Equal(gitsyncv1.HookSyncFail))
	g.Expect(app.Status.Hooks[1].Result).To(Equal("Succeeded"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "main")).To(BeFalse())
	g.Consistently(created, 3*time.Second, 200*time.Millisecond).Should(Equal(2), "forever and on-fail, each created once")
}

// Fair sharing between namespaces: twenty Applications of one namespace, each with a
// sync that holds a worker for a while (its first look at a PreSync hook that never
// completes), are queued before another namespace's Application; that one is served
// before most of the twenty, not after all of them: one namespace runs at most half
// the workers at once.
func TestOneNamespaceDoesNotTakeEveryWorker(t *testing.T) {
	g := NewWithT(t)
	const many = 20
	files := map[string]string{}
	for i := range many {
		dir := fmt.Sprintf("a%d/", i)
		files[dir+"migrate.yaml"] = jobYAML("generateName", "migrate-", `gitsync.dev/hook: PreSync`)
		files[dir+"cm.yaml"] = configMapYAML(fmt.Sprintf("cm-%d", i), "1")
	}
	busy, _ := newAppFixture(t, files)
	other, otherSHA := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("other", "1")})
	for _, f := range []*appFixture{busy, other} {
		g.Eventually(func(g Gomega) *gitsyncv1.Artifact { return getRepo(g, f.ns, "repo").Status.Artifact }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	}
	started := func(g Gomega) int {
		n := 0
		for i := range many {
			if len(busy.hookJobs(g, fmt.Sprintf("a%d", i))) > 0 {
				n++
			}
		}
		return n
	}
	for i := range many {
		name := fmt.Sprintf("a%d", i)
		busy.app(name, func(a *gitsyncv1.Application) {
			a.Spec.Path = "./" + name
			a.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		})
		busy.suspendAtEnd(name)
	}
	other.app("app")
	other.waitApplied("app", otherSHA)
	g.Expect(started(g)).To(BeNumerically("<", many/2), "the other namespace's Application waited for most of the first's")
	// And the first namespace's syncs all start, in turn.
	g.Eventually(started).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Equal(many))
}

// A new revision supersedes a sync that waits for a hook of the revision before, as it
// superseded one that waited in its worker (the next sync was of the new revision): its
// own run starts at once, hooks included, and completes.
func TestNewRevisionSupersedesAWaitingSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	files := map[string]string{
		"migrate.yaml": jobYAML("name", "migrate", `gitsync.dev/hook: PreSync`),
		"cm.yaml":      configMapYAML("main", "1"),
	}
	f, sha1 := newAppFixture(t, files)
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute} })
	f.suspendAtEnd("app")
	first := f.waitHookJob("app", "migrate")
	g.Eventually(func(g Gomega) *gitsyncv1.SyncProgress { return f.get(g, "app").Status.SyncProgress }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeNil())
	g.Expect(f.get(g, "app").Status.SyncProgress).To(HaveField("Revision", "main@sha1:"+sha1))

	files["cm.yaml"] = configMapYAML("main", "2")
	sha2 := f.repo.Commit("main", "two", files)
	var second batchv1.Job
	g.Eventually(func(g Gomega) {
		jobs := f.hookJobs(g, "app")
		g.Expect(jobs).To(HaveLen(1))
		g.Expect(jobs[0].UID).NotTo(Equal(first.UID), "the new revision's run created its hook")
		second = jobs[0]
		progress := f.get(g, "app").Status.SyncProgress
		g.Expect(progress).NotTo(BeNil())
		g.Expect(progress.Revision).To(Equal("main@sha1:" + sha2))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, second.Name, true)).To(Succeed())
	app := f.waitApplied("app", sha2)
	g.Expect(f.configMap(g, "main").Data["value"]).To(Equal("2"))
	g.Expect(app.Status.SyncProgress).To(BeNil())
	g.Expect(app.Status.HooksRevision).To(Equal("main@sha1:" + sha2))
}

// A sync request while a sync waits: a plain one is taken by the waiting sync (no hook
// again); one that asks for the hooks starts a run of its own, whose hook is new.
func TestSyncRequestDuringAWait(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"migrate.yaml": jobYAML("name", "migrate", `gitsync.dev/hook: PreSync`),
		"cm.yaml":      configMapYAML("main", "1"),
	})
	created := jobCreations(t, f.ns)
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute} })
	f.suspendAtEnd("app")
	first := f.waitHookJob("app", "migrate")
	request := func(value string, hooks bool) {
		t.Helper()
		f.edit(g, "app", func(a *gitsyncv1.Application) {
			a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
			if hooks {
				a.Annotations[gitsyncv1.RunHooksAnnotation] = value
			}
		})
		g.Eventually(func(g Gomega) string { return f.get(g, "app").Status.LastHandledReconcileAt }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(value))
	}

	request("plain", false)
	g.Consistently(created, 2*time.Second, 100*time.Millisecond).Should(Equal(1), "the waiting sync took the plain request")
	g.Expect(f.get(g, "app").Status.SyncProgress).NotTo(BeNil())

	request("hooks", true)
	g.Eventually(created).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(2))
	second := f.waitHookJob("app", "migrate")
	g.Expect(second.UID).NotTo(Equal(first.UID))
	g.Expect(kubelet.FinishJob(context.Background(), env.Client, f.ns, "migrate", true)).To(Succeed())
	f.waitApplied("app", sha)
	g.Expect(created()).To(Equal(2))
}
