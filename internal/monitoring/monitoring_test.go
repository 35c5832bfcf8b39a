package monitoring

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// The gauge follows each object's Ready condition as stored by the API server.
func TestReadyGauge(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	create := func(name string, status metav1.ConditionStatus, suspend bool) {
		repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gitsyncv1.GitRepositorySpec{URL: "https://example.com/org/" + name, Suspend: suspend}}
		if err := env.Client.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
		if status == "" {
			return
		}
		repo.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: status, Reason: "FetchFailed",
			Message: "x", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	create("ok", metav1.ConditionTrue, false)
	create("broken", metav1.ConditionFalse, false)
	create("new", "", false)
	create("paused", metav1.ConditionFalse, true)

	c := &Collector{}
	c.Observe(env.Client)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP gitsync_resource_ready Ready condition of GitRepositories and Applications: 1 True, 0 False, -1 Unknown (suspended objects are left out).
# TYPE gitsync_resource_ready gauge
gitsync_resource_ready{kind="GitRepository",name="broken",namespace="NS",reason="FetchFailed"} 0
gitsync_resource_ready{kind="GitRepository",name="new",namespace="NS",reason=""} -1
gitsync_resource_ready{kind="GitRepository",name="ok",namespace="NS",reason="FetchFailed"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.ReplaceAll(want, "NS", ns)), ReadyMetric); err != nil {
		t.Error(err)
	}
}

// The Runnable observes its reader while it runs and lets go of it when its run ends
// (a stopped manager's cache is neither scraped nor kept); a later run observes again.
func TestRunnableObservesWhileRunning(t *testing.T) {
	ns := env.Namespace(t)
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://example.com/org/repo"}}
	if err := env.Client.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	c := &Collector{}
	count := func() int {
		n, err := testutil.GatherAndCount(registry(c), ReadyMetric)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Runnable(env.Client).Start(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("before a run: %d gauges, want none", n)
	}
	stop := run()
	waitFor(t, func() bool { return count() > 0 })
	stop()
	if c.reader.Load() != nil {
		t.Error("the collector still holds the reader of a stopped run")
	}
	if n := count(); n != 0 {
		t.Errorf("after the run: %d gauges, want none", n)
	}
	stop = run()
	defer stop()
	waitFor(t, func() bool { return count() > 0 })
	if c.Runnable(env.Client).(interface{ NeedLeaderElection() bool }).NeedLeaderElection() {
		t.Error("the gauges are for every replica, not only the leader")
	}
}

func registry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
