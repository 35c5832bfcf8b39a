package phase

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

func parse(t testing.TB, format string, args ...any) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(fmt.Appendf(nil, format, args...), &o.Object); err != nil {
		t.Fatal(err)
	}
	return o
}

func configMap(t testing.TB, ns, name string, annotations string) *unstructured.Unstructured {
	return parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, annotations: {%s}}\ndata: {k: v}\n", name, ns, annotations)
}

func deployment(t testing.TB, ns, name, annotations string) *unstructured.Unstructured {
	return parse(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, annotations: {%s}}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: app, image: example.com/app:1}]}
`, name, ns, annotations)
}

// job is a hook Job; name ending in "-" is a generateName.
func job(t testing.TB, ns, name, annotations string) *unstructured.Unstructured {
	key := "name"
	if strings.HasSuffix(name, "-") {
		key = "generateName"
	}
	return parse(t, `
apiVersion: batch/v1
kind: Job
metadata: {%s: %s, namespace: %s, annotations: {%s}}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: example.com/migrate:1}]
`, key, name, ns, annotations)
}

var logf = func(string, ...any) {}

func runner(ns string) *Runner {
	m := apply.New(env.Client, env.Client, apply.Owner{Name: "app", Namespace: ns})
	return &Runner{
		Client:     env.Client,
		Applier:    m,
		Judge:      m.Judge(),
		HookLabels: map[string]string{gitsyncv1.HookApplicationLabel: "app", gitsyncv1.HookApplicationNamespaceLabel: ns},
		Timeout:    30 * time.Second,
		Progress:   func(_ context.Context, msg string) { logf("progress: %s", msg) },
	}
}

func exists(ctx context.Context, o *unstructured.Unstructured) bool {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	return !apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(o), live))
}

// hooksOf lists the Jobs created as hooks in ns.
func hooksOf(ctx context.Context, ns string) []unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("batch/v1")
	list.SetKind("JobList")
	_ = env.Client.List(ctx, list, client.InNamespace(ns), client.HasLabels{gitsyncv1.HookApplicationLabel})
	return list.Items
}

func finishJob(ctx context.Context, t testing.TB, j *unstructured.Unstructured, succeeded bool) {
	t.Helper()
	if err := kubelet.FinishJob(ctx, env.Client, j.GetNamespace(), j.GetName(), succeeded); err != nil {
		t.Fatal(err)
	}
}

func makeAvailable(ctx context.Context, t testing.TB, d *unstructured.Unstructured) {
	t.Helper()
	if err := kubelet.MakeAvailable(ctx, env.Client, d.GetNamespace(), d.GetName()); err != nil {
		t.Fatal(err)
	}
}

type done struct {
	out *Outcome
	err error
}

func start(ctx context.Context, r *Runner, objs []*unstructured.Unstructured, hooks bool) (chan done, *Plan, error) {
	plan, err := New(objs)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan done, 1)
	go func() {
		out, err := r.Run(ctx, plan, Options{Hooks: hooks})
		ch <- done{out, err}
	}()
	return ch, plan, nil
}

func TestRunWavesWaitForHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	logf = t.Logf
	db := deployment(t, ns, "db", `gitsync.dev/sync-wave: "0"`)
	web := deployment(t, ns, "web", `argocd.argoproj.io/sync-wave: "1"`)
	last := configMap(t, ns, "last", `gitsync.dev/sync-wave: "2"`)
	ch, _, err := start(ctx, runner(ns), []*unstructured.Unstructured{last, web, db}, false)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() bool { return exists(ctx, db) }, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Consistently(func() bool { return exists(ctx, web) }, time.Second, 100*time.Millisecond).Should(BeFalse(), "wave 1 before wave 0 is healthy")
	makeAvailable(ctx, t, db)
	g.Eventually(func() bool { return exists(ctx, web) }, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Consistently(func() bool { return exists(ctx, last) }, time.Second, 100*time.Millisecond).Should(BeFalse(), "wave 2 before wave 1 is healthy")
	makeAvailable(ctx, t, web)
	var d done
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).NotTo(HaveOccurred())
	g.Expect(exists(ctx, last)).To(BeTrue())
	g.Expect(d.out.Result.Inventory).To(HaveLen(3))
}

func TestRunPreSyncHookGatesTheMainSet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	main := configMap(t, ns, "main", "")
	hook := job(t, ns, "migrate-", `gitsync.dev/hook: PreSync, gitsync.dev/hook-delete-policy: HookSucceeded`)
	ch, _, err := start(ctx, runner(ns), []*unstructured.Unstructured{main, hook}, true)
	g.Expect(err).NotTo(HaveOccurred())

	var jobs []unstructured.Unstructured
	g.Eventually(func() int { jobs = hooksOf(ctx, ns); return len(jobs) }, 10*time.Second, 50*time.Millisecond).Should(Equal(1))
	g.Expect(jobs[0].GetName()).To(HavePrefix("migrate-"))
	g.Consistently(func() bool { return exists(ctx, main) }, time.Second, 100*time.Millisecond).Should(BeFalse())
	finishJob(ctx, t, &jobs[0], true)

	var d done
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).NotTo(HaveOccurred())
	g.Expect(exists(ctx, main)).To(BeTrue())
	g.Expect(d.out.Hooks).To(HaveLen(1))
	g.Expect(d.out.Hooks[0]).To(MatchFields2(gitsyncv1.HookPreSync, HookSucceeded, true))
	g.Eventually(func() int { return len(hooksOf(ctx, ns)) }, 10*time.Second, 50*time.Millisecond).Should(BeZero(), "HookSucceeded deletes it")
	g.Expect(d.out.Result.Inventory).To(HaveLen(1), "hooks are not in the inventory")
}

func TestRunFailedPreSyncAppliesNothingAndRunsSyncFail(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	main := configMap(t, ns, "main", "")
	onFail := configMap(t, ns, "on-fail", `argocd.argoproj.io/hook: SyncFail`)
	hook := job(t, ns, "migrate", `helm.sh/hook: pre-upgrade`)
	ch, _, err := start(ctx, runner(ns), []*unstructured.Unstructured{main, hook, onFail}, true)
	g.Expect(err).NotTo(HaveOccurred())

	var jobs []unstructured.Unstructured
	g.Eventually(func() int { jobs = hooksOf(ctx, ns); return len(jobs) }, 10*time.Second, 50*time.Millisecond).Should(Equal(1))
	finishJob(ctx, t, &jobs[0], false)

	var d done
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).To(MatchError(ContainSubstring("PreSync hook Job/migrate failed")))
	g.Expect(d.out.Phase).To(Equal(gitsyncv1.HookPreSync))
	g.Expect(exists(ctx, main)).To(BeFalse(), "nothing of the main set is applied")
	g.Expect(exists(ctx, onFail)).To(BeTrue(), "the SyncFail hook ran")
	g.Expect(d.out.Result).To(BeNil())
}

func TestRunPostSyncAfterHealthyAndBeforeHookCreation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	web := deployment(t, ns, "web", "")
	smoke := job(t, ns, "smoke", `gitsync.dev/hook: PostSync`)
	r := runner(ns)
	ch, _, err := start(ctx, r, []*unstructured.Unstructured{web, smoke}, true)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() bool { return exists(ctx, web) }, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Consistently(func() int { return len(hooksOf(ctx, ns)) }, time.Second, 100*time.Millisecond).Should(BeZero(), "PostSync waits for health")
	makeAvailable(ctx, t, web)
	var jobs []unstructured.Unstructured
	g.Eventually(func() int { jobs = hooksOf(ctx, ns); return len(jobs) }, 10*time.Second, 50*time.Millisecond).Should(Equal(1))
	firstUID := jobs[0].GetUID()
	finishJob(ctx, t, &jobs[0], true)
	var d done
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).NotTo(HaveOccurred())
	g.Expect(hooksOf(ctx, ns)).To(HaveLen(1), "the default policy keeps a finished hook until the next run")

	// The next run deletes the previous hook before it creates it again.
	ch, _, _ = start(ctx, r, []*unstructured.Unstructured{web, smoke}, true)
	g.Eventually(func() bool {
		jobs = hooksOf(ctx, ns)
		return len(jobs) == 1 && jobs[0].GetUID() != firstUID
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	finishJob(ctx, t, &jobs[0], true)
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).NotTo(HaveOccurred())

	// Without hooks (a resync of the same revision), the hook is not run again.
	out, err := r.Run(ctx, mustPlan(t, web, smoke), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Hooks).To(BeEmpty())
}

func TestRunInvalidHookFailsBeforeAnyWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	main := configMap(t, ns, "main", "")
	bad := parse(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad, namespace: %s, annotations: {gitsync.dev/hook: PreSync}}\nspec: {}\n", ns)
	_, err := runner(ns).Run(ctx, mustPlan(t, main, bad), Options{Hooks: true})
	g.Expect(err).To(MatchError(ContainSubstring("PreSync hook Job/")))
	g.Expect(exists(ctx, main)).To(BeFalse())
	g.Expect(hooksOf(ctx, ns)).To(BeEmpty())
}

func mustPlan(t testing.TB, objs ...*unstructured.Unstructured) *Plan {
	p, err := New(objs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// MatchFields2 matches a HookRun's phase, result and deletion.
func MatchFields2(phase, result string, deleted bool) OmegaMatcher {
	return WithTransform(func(h HookRun) string { return fmt.Sprintf("%s/%s/%v", h.Phase, h.Result, h.Deleted) },
		Equal(fmt.Sprintf("%s/%s/%v", phase, result, deleted)))
}

func TestRunPreSyncHookInANamespaceOfTheRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "presync-" + strings.ToLower(strings.ReplaceAll(t.Name()[len(t.Name())-8:], "/", ""))
	space := parse(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
	main := configMap(t, ns, "main", "")
	hook := job(t, ns, "migrate", `gitsync.dev/hook: PreSync`)
	ch, _, err := start(ctx, runner(ns), []*unstructured.Unstructured{main, hook, space}, true)
	g.Expect(err).NotTo(HaveOccurred())
	var jobs []unstructured.Unstructured
	g.Eventually(func() int { jobs = hooksOf(ctx, ns); return len(jobs) }, 10*time.Second, 50*time.Millisecond).Should(Equal(1))
	g.Expect(exists(ctx, main)).To(BeFalse(), "only the Namespace comes before PreSync")
	finishJob(ctx, t, &jobs[0], true)
	var d done
	g.Eventually(ch, 10*time.Second).Should(Receive(&d))
	g.Expect(d.err).NotTo(HaveOccurred())
	g.Expect(d.out.Result.Inventory).To(HaveLen(2), "the Namespace counts once")
}

// A named hook deletes only this Application's previous hook of that name: another
// object of the name (someone else's ConfigMap) is never deleted, the run fails instead.
func TestRunNamedHookNeverDeletesAnotherObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	victim := configMap(t, ns, "precious", "")
	g.Expect(env.Client.Create(ctx, victim.DeepCopy())).To(Succeed())
	hook := configMap(t, ns, "precious", `gitsync.dev/hook: PreSync, gitsync.dev/hook-delete-policy: BeforeHookCreation`)
	_, err := runner(ns).Run(ctx, mustPlan(t, hook), Options{Hooks: true})
	g.Expect(err).To(MatchError(ContainSubstring("is not a hook of this Application")))
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(victim.GroupVersionKind())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(victim), live)).To(Succeed())
	g.Expect(live.GetLabels()).NotTo(HaveKey(gitsyncv1.HookApplicationLabel), "the original, not a re-created hook")
}
