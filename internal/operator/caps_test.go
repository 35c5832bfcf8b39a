package operator

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A tenant's `timeout: 8760h` does not hold a worker for a year: the operator's
// --max-timeout bounds its PreSync hook's wait (the hook never finishes here), with a
// LimitApplied Warning, and the sync fails with the cap's timeout.
func TestMaxTimeoutBoundsAHookWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mgr, err := New(env.Config, env.Scheme, Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: t.TempDir(), SkipNameValidation: true,
		DenyEgress: NoEgressGuard, Caps: limits.Caps{MaxTimeout: 2 * time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("app").Commit("main", "hook", map[string]string{"job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: forever
  annotations: {gitsync.dev/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: example.com/run:1}]
`, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: main}\n"})
	ns := env.Namespace(t)
	t.Cleanup(func() { cleanUp(t, ns) })
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app")},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app"},
			Timeout: &metav1.Duration{Duration: 8760 * time.Hour}},
	})).To(Succeed())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, app)).To(Succeed())
		ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(gitsyncv1.HookFailedReason))
		g.Expect(ready.Message).To(ContainSubstring("timed out after 2s"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))
	g.Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Reason == gitsyncv1.LimitAppliedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(10 * time.Second).Should(ContainElement(ContainSubstring("spec.timeout 8760h0m0s is over the operator's --max-timeout: 2s applies")))
}

// cleanUp deletes the namespace's Applications and sources while an operator still runs
// (it releases their finalizers), so that the package's later operators, which watch
// every namespace, do not reconcile them (and count their requests).
func cleanUp(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(env.Client.DeleteAllOf(ctx, &gitsyncv1.Application{}, client.InNamespace(ns))).To(Succeed())
	g.Expect(env.Client.DeleteAllOf(ctx, &gitsyncv1.GitRepository{}, client.InNamespace(ns))).To(Succeed())
	g.Eventually(func(g Gomega) int {
		list := &gitsyncv1.ApplicationList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		return len(list.Items)
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(BeZero())
}
