package phase

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// resumeUntil runs the plan again from st until the run no longer waits (or until
// stop says so), as the controller does on each requeue.
func resumeUntil(ctx context.Context, t *testing.T, r *Runner, plan *Plan, st *State, stop func(*Outcome) bool) (*Outcome, error) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		out, err := r.Run(ctx, plan, Options{Hooks: true, Resume: st})
		if err != nil || out.Waiting == nil || stop(out) {
			return out, err
		}
		st = out.Waiting
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the run still waits")
	return nil, nil
}

// With Yield, a run returns instead of waiting for a hook or a wave; resumed from its
// State it creates no hook again, applies no wave again, and goes on once what it
// waits for is done: PreSync, wave 0, wave 1, PostSync.
func TestRunYieldsAndResumes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	hook := job(t, ns, "migrate-", `gitsync.dev/hook: PreSync, gitsync.dev/hook-delete-policy: HookSucceeded`)
	db := deployment(t, ns, "db", `gitsync.dev/sync-wave: "0"`)
	last := configMap(t, ns, "last", `gitsync.dev/sync-wave: "1"`)
	smoke := job(t, ns, "smoke", `gitsync.dev/hook: PostSync`)
	r := runner(ns)
	r.Yield = 300 * time.Millisecond
	plan := mustPlan(t, hook, db, last, smoke)

	start := time.Now()
	out, err := r.Run(ctx, plan, Options{Hooks: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the run yields instead of waiting")
	g.Expect(out.Waiting).NotTo(BeNil())
	g.Expect(out.Waiting.Running()).To(HaveLen(1))
	g.Expect(out.Waiting.Running()[0].Phase).To(Equal(gitsyncv1.HookPreSync))
	jobs := hooksOf(ctx, ns)
	g.Expect(jobs).To(HaveLen(1))
	uid := jobs[0].GetUID()

	// Resumed while the hook runs: the same Job, nothing applied.
	st := out.Waiting
	for range 5 {
		out, err = r.Run(ctx, plan, Options{Hooks: true, Resume: st})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.Waiting).NotTo(BeNil())
		st = out.Waiting
	}
	jobs = hooksOf(ctx, ns)
	g.Expect(jobs).To(HaveLen(1))
	g.Expect(jobs[0].GetUID()).To(Equal(uid), "the hook was not created again")
	g.Expect(exists(ctx, db)).To(BeFalse())

	// The hook completes: wave 0 is applied, and the run waits for its health.
	finishJob(ctx, t, &jobs[0], true)
	out, err = resumeUntil(ctx, t, r, plan, st, func(o *Outcome) bool { return o.Waiting.Applied == 1 })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting.Running()).To(BeEmpty(), "it waits for a wave")
	g.Expect(exists(ctx, db)).To(BeTrue())
	g.Expect(exists(ctx, last)).To(BeFalse())

	// Wave 0 healthy: wave 1, then the PostSync hook, awaited in turn.
	makeAvailable(ctx, t, db)
	out, err = resumeUntil(ctx, t, r, plan, out.Waiting, func(o *Outcome) bool { return len(o.Waiting.Running()) == 1 })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting.Running()[0].Name).To(Equal("smoke"))
	g.Expect(exists(ctx, last)).To(BeTrue())
	smokeJob := &unstructured.Unstructured{}
	smokeJob.SetNamespace(ns)
	smokeJob.SetName("smoke")
	finishJob(ctx, t, smokeJob, true)
	out, err = resumeUntil(ctx, t, r, plan, out.Waiting, func(*Outcome) bool { return false })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).To(BeNil())
	g.Expect(out.Hooks).To(HaveLen(2))
	g.Expect(out.Hooks[0]).To(MatchFields2(gitsyncv1.HookPreSync, HookSucceeded, true))
	g.Expect(out.Hooks[1]).To(MatchFields2(gitsyncv1.HookPostSync, HookSucceeded, false))
	g.Expect(out.Result.Inventory).To(HaveLen(2))
	g.Eventually(func() []unstructured.Unstructured { return hooksOf(ctx, ns) }, 10*time.Second, 50*time.Millisecond).
		Should(ConsistOf(WithTransform(func(j unstructured.Unstructured) string { return j.GetName() }, Equal("smoke"))),
			"HookSucceeded deleted the PreSync hook once its phase was over")
}

// The run's timeout counts from its start, not from each resume: a hook that never
// finishes fails the run after Timeout, with today's message, and the SyncFail hook is
// created once.
func TestRunTimeoutSpansResumes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	hook := job(t, ns, "forever", `gitsync.dev/hook: PreSync`)
	onFail := job(t, ns, "on-fail-", `gitsync.dev/hook: SyncFail`)
	main := configMap(t, ns, "main", "")
	r := runner(ns)
	r.Yield, r.Timeout = 200*time.Millisecond, 2*time.Second
	plan := mustPlan(t, hook, onFail, main)

	start := time.Now()
	out, err := r.Run(ctx, plan, Options{Hooks: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).NotTo(BeNil())
	var syncFail *State
	out, err = resumeUntil(ctx, t, r, plan, out.Waiting, func(o *Outcome) bool {
		if o.Waiting.Failure != "" {
			syncFail = o.Waiting
		}
		return false
	})
	g.Expect(syncFail).NotTo(BeNil(), "the run waited for its SyncFail hook")
	g.Expect(syncFail.Failure).To(ContainSubstring("PreSync hook Job/forever failed: timed out after 2s"))
	g.Expect(err).To(MatchError(ContainSubstring("timed out after 2s")))
	elapsed := time.Since(start)
	g.Expect(elapsed).To(BeNumerically(">=", 2*time.Second))
	g.Expect(out.Phase).To(Equal(gitsyncv1.HookPreSync))
	g.Expect(exists(ctx, main)).To(BeFalse())
	var failHooks int
	for _, j := range hooksOf(ctx, ns) {
		if j.GetGenerateName() == "on-fail-" {
			failHooks++
		}
	}
	g.Expect(failHooks).To(Equal(1), "the SyncFail hook was created once")
	g.Expect(out.Hooks).To(HaveLen(2))
	g.Expect(out.Hooks[1].Phase).To(Equal(gitsyncv1.HookSyncFail))
}

// A resumed run applies the waves applied before it yielded only when asked (Reapply:
// the controller asks when it did not hold the Application's drift lock meanwhile).
func TestRunReappliesOnResumeWhenAsked(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	db := deployment(t, ns, "db", `gitsync.dev/sync-wave: "0"`)
	last := configMap(t, ns, "last", `gitsync.dev/sync-wave: "1"`)
	r := runner(ns)
	r.Yield = 200 * time.Millisecond
	plan := mustPlan(t, db, last)

	out, err := r.Run(ctx, plan, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).NotTo(BeNil())
	g.Expect(out.Waiting.Applied).To(Equal(1))
	g.Expect(out.Result.Count("created")).To(Equal(1))
	g.Expect(env.Client.Delete(ctx, db.DeepCopy())).To(Succeed())
	g.Eventually(func() bool { return exists(ctx, db) }, 10*time.Second, 50*time.Millisecond).Should(BeFalse())

	out, err = r.Run(ctx, plan, Options{Resume: out.Waiting})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).NotTo(BeNil())
	g.Expect(exists(ctx, db)).To(BeFalse(), "not applied again")
	g.Expect(out.Result.Count("unchanged")).To(Equal(1), "reported as applied before")
	g.Expect(out.Waiting.Created).To(Equal(1), "the count of the first call carries over")

	out, err = r.Run(ctx, plan, Options{Resume: out.Waiting, Reapply: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).NotTo(BeNil())
	g.Expect(exists(ctx, db)).To(BeTrue(), "applied again")
	makeAvailable(ctx, t, db)
	out, err = r.Run(ctx, plan, Options{Resume: out.Waiting})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Waiting).To(BeNil())
	g.Expect(exists(ctx, last)).To(BeTrue())
	g.Expect(out.Result.Inventory).To(HaveLen(2))
}
