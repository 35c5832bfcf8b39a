// Package bench measures gitsync end to end against a real API server and a real Git
// server: `make bench` (or go test -run '^$' -bench . -benchtime 1x -count 5 ./bench/).
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/application"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
	"github.com/gitsync-dev/gitsync/internal/localcluster"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	// The operators the benchmarks run log nothing, as before, but say so: without a
	// logger set, controller-runtime prints a warning with a stack trace at its first log.
	ctrl.SetLogger(logr.Discard())
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: no API server needed
	}
	// BenchmarkBinary counts its operator's requests in the API server's audit log.
	dir, err := os.MkdirTemp("", "gitsync-bench-audit-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditPath = filepath.Join(dir, "audit.log")
	code := testenv.RunWith(m, &env, localcluster.Options{AuditLog: auditPath, AuditPolicy: binaryAuditPolicy}, nil)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startOperator runs gitsync's manager with its API requests counted.
func startOperator(b *testing.B, storage string) (*apicount.Counter, *rest.Config, manager.Manager) {
	b.Helper()
	counter := apicount.New()
	cfg := operatorConfig(b)
	counter.Wrap(cfg)
	mgr, err := operator.New(cfg, env.Scheme, operator.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: storage, Concurrent: 4,
		SkipNameValidation: true, DenyEgress: operator.NoEgressGuard,
		RenderWorkers: renderWorkers(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			b.Error(err)
		}
	}()
	b.Cleanup(func() { cancel(); <-done })
	return counter, cfg, mgr
}

// objectFiles renders n objects: ConfigMaps, and every fifth a Service.
func objectFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		if i%5 == 4 {
			files[fmt.Sprintf("svc-%03d.yaml", i)] = fmt.Sprintf(
				"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%03d\nspec:\n  ports:\n    - port: 80\n  selector:\n    app: a%d\n", i, i)
			continue
		}
		files[fmt.Sprintf("cm-%03d.yaml", i)] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  value: \"%d\"\n", i, i)
	}
	return files
}

func createPair(b *testing.B, c client.Client, ns, name, url string) {
	b.Helper()
	ctx := context.Background()
	repo := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: url, Interval: &metav1.Duration{Duration: 10 * time.Minute}},
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name},
			Prune:     true,
			Interval:  &metav1.Duration{Duration: 10 * time.Minute},
		},
	}
	if err := c.Create(ctx, repo); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, app); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApply100 applies an Application of 100 objects (cold), then runs a resync
// with nothing changed through the reconciler itself, counting API requests of each.
func BenchmarkApply100(b *testing.B) {
	for range b.N {
		b.StopTimer()
		storage := b.TempDir()
		counter, cfg, mgr := startOperator(b, storage)
		srv := gittest.NewServer(b, gittest.Options{})
		srv.CreateRepo("app").Commit("main", "100 objects", objectFiles(100))
		ns := namespace(b)

		before := counter.Snapshot()
		start := time.Now()
		b.StartTimer()
		createPair(b, env.Client, ns, "app", srv.HTTPURL("app"))
		waitAllReady(b, ns, []string{"app"}, 5*time.Minute)
		b.StopTimer()
		cold := time.Since(start)
		coldCounts := counter.Since(before)

		// The resync: the same reconciler code, called directly so that exactly one
		// reconcile is counted (the manager's next one is 10 minutes away).
		resync := resyncReconciler(b, cfg, mgr, storage)
		before = counter.Snapshot()
		start = time.Now()
		if _, err := resync.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "app"}}); err != nil {
			b.Fatal(err)
		}
		warm := time.Since(start)
		resyncCounts := counter.Since(before)

		b.ReportMetric(cold.Seconds()*1000, "cold-ms")
		b.ReportMetric(float64(apicount.Total(coldCounts)), "cold-requests")
		b.ReportMetric(warm.Seconds()*1000, "resync-ms")
		b.ReportMetric(float64(apicount.Total(resyncCounts)), "resync-requests")
		b.ReportMetric(float64(apicount.Writes(resyncCounts)), "resync-writes")
		b.Logf("cold apply: %v, requests: %s", cold.Round(time.Millisecond), apicount.Format(coldCounts))
		b.Logf("no-change resync: %v, requests: %s", warm.Round(time.Millisecond), apicount.Format(resyncCounts))
		if w := apicount.Writes(resyncCounts); w != 0 {
			b.Errorf("a no-change resync wrote %d times: %s", w, apicount.Format(resyncCounts))
		}
	}
}

// resyncReconciler is an Application reconciler like the manager's, with its requests
// going through the counted config.
func resyncReconciler(b *testing.B, cfg *rest.Config, mgr manager.Manager, storage string) *application.Reconciler {
	b.Helper()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: mgr.GetRESTMapper()})
	if err != nil {
		b.Fatal(err)
	}
	applier, err := impersonate.New(cfg, mgr)
	if err != nil {
		b.Fatal(err)
	}
	fetcher, err := source.NewFetcher(storage)
	if err != nil {
		b.Fatal(err)
	}
	return &application.Reconciler{
		Client: c, APIReader: c, Applier: applier, Mapper: mgr.GetRESTMapper(),
		Storage: fetcher, Recorder: mgr.GetEventRecorder("bench"),
	}
}

// BenchmarkColdStart50x20 creates 50 GitRepositories and 50 Applications of 20
// ConfigMaps each and measures until all are Ready (goal: under 7 s; Flux: 13.8 s).
func BenchmarkColdStart50x20(b *testing.B) {
	for range b.N {
		b.StopTimer()
		counter, _, _ := startOperator(b, b.TempDir())
		srv := gittest.NewServer(b, gittest.Options{})
		ns := namespace(b)
		names := make([]string, 50)
		for i := range names {
			names[i] = fmt.Sprintf("app-%02d", i)
			files := map[string]string{}
			for j := range 20 {
				files[fmt.Sprintf("cm-%02d.yaml", j)] = fmt.Sprintf(
					"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%02d\ndata:\n  value: \"%d\"\n", names[i], j, j)
			}
			srv.CreateRepo(names[i]).Commit("main", "20 configmaps", files)
		}
		before := counter.Snapshot()
		start := time.Now()
		b.StartTimer()
		for _, name := range names {
			createPair(b, env.Client, ns, name, srv.HTTPURL(name))
		}
		waitAllReady(b, ns, names, 5*time.Minute)
		b.StopTimer()
		elapsed := time.Since(start)
		counts := counter.Since(before)
		b.ReportMetric(elapsed.Seconds(), "all-ready-s")
		b.ReportMetric(float64(apicount.Total(counts)), "requests")
		b.Logf("50 apps x 20 ConfigMaps Ready in %v; requests: %s", elapsed.Round(time.Millisecond), apicount.Format(counts))
	}
}
