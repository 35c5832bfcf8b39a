package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// BenchmarkChart100 syncs a Helm chart in Git that renders 100 objects (80 ConfigMaps,
// 10 Services, 10 Deployments: internal/helm/testdata/hundred): the cold render + apply
// until Ready, then a sync requested with gitsync.dev/requested-at with nothing changed
// (until status.lastHandledReconcileAt says it ran), then one more resync through the
// reconciler itself. Each reports its API requests; a no-change sync writes no object
// (checked by resourceVersion) and its only write is the Application's status patch that
// records the handled request.
func BenchmarkChart100(b *testing.B) {
	files := chartRepoFiles(b, filepath.Join("..", "internal", "helm", "testdata", "hundred"))
	for range b.N {
		run := syncCold(b, files)
		ns, counter := run.ns, run.counter
		cold, coldCounts := run.took, run.counts
		if n := len(managedVersions(b, ns)); n != 100 {
			b.Fatalf("the chart applied %d objects, want 100", n)
		}

		// A sync requested by a person (gitsync reconcile app): the full render, dry-run
		// and apply, through the running manager.
		versions := managedVersions(b, ns)
		before := counter.Snapshot()
		start := time.Now()
		requestSync(b, ns, "app", "bench-1")
		requested := time.Since(start)
		requestedCounts := counter.Since(before)
		objectWrites := changedVersions(versions, managedVersions(b, ns))

		// The same sync through the reconciler called directly, so that exactly one
		// reconcile is counted (and no status write: the request was handled already).
		resync := resyncReconciler(b, run.cfg, run.mgr, run.storage)
		resync.Config = run.cfg
		dc, err := discovery.NewDiscoveryClientForConfig(run.cfg)
		if err != nil {
			b.Fatal(err)
		}
		resync.Discovery = dc
		before = counter.Snapshot()
		start = time.Now()
		if _, err := resync.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "app"}}); err != nil {
			b.Fatal(err)
		}
		direct := time.Since(start)
		directCounts := counter.Since(before)
		objectWrites += changedVersions(versions, managedVersions(b, ns))

		b.ReportMetric(cold.Seconds()*1000, "cold-ms")
		b.ReportMetric(float64(apicount.Total(coldCounts)), "cold-requests")
		b.ReportMetric(requested.Seconds()*1000, "sync-ms")
		b.ReportMetric(float64(apicount.Total(requestedCounts)), "sync-requests")
		b.ReportMetric(float64(apicount.Writes(requestedCounts)), "sync-writes")
		b.ReportMetric(direct.Seconds()*1000, "resync-ms")
		b.ReportMetric(float64(apicount.Total(directCounts)), "resync-requests")
		b.ReportMetric(float64(apicount.Writes(directCounts)), "resync-writes")
		b.ReportMetric(float64(objectWrites), "object-writes")
		b.Logf("cold render+apply: %v, requests: %s", cold.Round(time.Millisecond), apicount.Format(coldCounts))
		b.Logf("requested no-change sync: %v, requests: %s", requested.Round(time.Millisecond), apicount.Format(requestedCounts))
		b.Logf("direct no-change resync: %v, requests: %s", direct.Round(time.Millisecond), apicount.Format(directCounts))
		if objectWrites != 0 {
			b.Errorf("no-change syncs changed %d of the chart's objects", objectWrites)
		}
		if w := apicount.Writes(directCounts); w != 0 {
			b.Errorf("a no-change resync wrote %d times: %s", w, apicount.Format(directCounts))
		}
	}
}

// coldRun is a benchmark's operator (its API requests counted), its storage and
// namespace, and the cold sync there of an Application "app" (prune on, 10m intervals):
// the time from creating it and its GitRepository until Ready, and the requests.
type coldRun struct {
	counter     *apicount.Counter
	cfg         *rest.Config
	mgr         manager.Manager
	storage, ns string
	took        time.Duration
	counts      map[string]int
}

// syncCold starts an operator and a Git server holding files, and times the cold sync
// of an Application of them (the benchmark timer runs during the sync only).
func syncCold(b *testing.B, files map[string]string) coldRun {
	b.Helper()
	b.StopTimer()
	run := coldRun{storage: b.TempDir()}
	run.counter, run.cfg, run.mgr = startOperator(b, run.storage)
	srv := gittest.NewServer(b, gittest.Options{})
	srv.CreateRepo("app").Commit("main", "the benchmark's objects", files)
	run.ns = namespace(b)

	before := run.counter.Snapshot()
	start := time.Now()
	b.StartTimer()
	createPair(b, env.Client, run.ns, "app", srv.HTTPURL("app"))
	waitAllReady(b, run.ns, []string{"app"}, 5*time.Minute)
	b.StopTimer()
	run.took = time.Since(start)
	run.counts = run.counter.Since(before)
	return run
}

// chartRepoFiles reads a chart directory as the files of a repository with the chart at
// its root.
func chartRepoFiles(b *testing.B, dir string) map[string]string {
	b.Helper()
	files := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// requestSync sets gitsync.dev/requested-at (as `gitsync reconcile app` does) and waits
// until the Application reports the request handled.
func requestSync(b *testing.B, ns, name, value string) {
	b.Helper()
	ctx := context.Background()
	app := &gitsyncv1.Application{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		b.Fatal(err)
	}
	base := client.MergeFrom(app.DeepCopy())
	app.SetAnnotations(map[string]string{gitsyncv1.RequestedAtAnnotation: value})
	if err := env.Client.Patch(ctx, app, base); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			b.Fatal(err)
		}
		if app.Status.LastHandledReconcileAt == value {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("sync request %q not handled after 1m", value)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// managedVersions maps each ConfigMap, Service and Deployment of ns that gitsync manages
// to its resourceVersion.
func managedVersions(b *testing.B, ns string) map[string]string {
	b.Helper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{"ConfigMap": &corev1.ConfigMapList{}, "Service": &corev1.ServiceList{}, "Deployment": &appsv1.DeploymentList{}}
	for kind, list := range lists {
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns), client.HasLabels{gitsyncv1.ApplicationLabel}); err != nil {
			b.Fatal(err)
		}
		if err := apimeta.EachListItem(list, func(o runtime.Object) error {
			m, err := apimeta.Accessor(o)
			out[kind+"/"+m.GetName()] = m.GetResourceVersion()
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// changedVersions counts the objects of before whose resourceVersion is not the same after.
func changedVersions(before, after map[string]string) int {
	n := 0
	for k, v := range before {
		if after[k] != v {
			n++
		}
	}
	return n
}
