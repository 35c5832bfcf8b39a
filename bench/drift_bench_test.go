package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
)

// deployApps creates apps Applications of perApp ConfigMaps each (interval as given)
// and waits until all are Ready.
func deployApps(b *testing.B, ns string, apps, perApp int, interval time.Duration) []string {
	b.Helper()
	srv := gittest.NewServer(b, gittest.Options{})
	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("app-%02d", i)
		files := map[string]string{}
		for j := range perApp {
			files[fmt.Sprintf("cm-%04d.yaml", j)] = fmt.Sprintf(
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%04d\ndata:\n  value: \"%d\"\n", names[i], j, j)
		}
		srv.CreateRepo(names[i]).Commit("main", "configmaps", files)
	}
	ctx := context.Background()
	for _, name := range names {
		repo := &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL(name), Interval: &metav1.Duration{Duration: interval}},
		}
		app := &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gitsyncv1.ApplicationSpec{
				SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name},
				Prune:     true,
				Interval:  &metav1.Duration{Duration: interval},
			},
		}
		if err := env.Client.Create(ctx, repo); err != nil {
			b.Fatal(err)
		}
		if err := env.Client.Create(ctx, app); err != nil {
			b.Fatal(err)
		}
	}
	waitAllReady(b, ns, names, 5*time.Minute)
	return names
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p+0.5)]
}

// BenchmarkDriftCorrection: 50 edits of managed fields (by another field manager)
// across 10 Applications; from the edit's response to the Git value read back.
func BenchmarkDriftCorrection(b *testing.B) {
	for range b.N {
		b.StopTimer()
		startOperator(b, b.TempDir())
		ns := namespace(b)
		names := deployApps(b, ns, 10, 5, 10*time.Minute)
		ctx := context.Background()
		var latencies []time.Duration
		b.StartTimer()
		for e := range 50 {
			app, j := names[e%10], e/10
			cm := &corev1.ConfigMap{}
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-cm-%04d", app, j)}
			if err := env.Client.Get(ctx, key, cm); err != nil {
				b.Fatal(err)
			}
			base := client.MergeFrom(cm.DeepCopy())
			want := cm.Data["value"]
			cm.Data["value"] = "edited-" + strconv.Itoa(e)
			if err := env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit")); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for {
				if err := env.Client.Get(ctx, key, cm); err != nil {
					b.Fatal(err)
				}
				if cm.Data["value"] == want {
					break
				}
				if time.Since(start) > 30*time.Second {
					b.Fatalf("edit %d of %s not corrected in 30s", e, key)
				}
				time.Sleep(2 * time.Millisecond)
			}
			latencies = append(latencies, time.Since(start))
		}
		b.StopTimer()
		p50, p95 := percentile(latencies, 0.5), percentile(latencies, 0.95)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
		b.Logf("50 edits across 10 apps: p50 %v, p95 %v, max %v", p50, p95, percentile(latencies, 1))
	}
}

// BenchmarkDriftPersonEdits: a person's `kubectl set image` edits of one Deployment's
// image (an Update by field manager kubectl-set), each a new value, the next one a
// second after the previous one was seen reverted (or its wait gave up). Reports how
// many edits were reverted within 30 s of the first, and p50/p95 from the edit's
// response to Git's image read back. docs/guides/drift.md: twenty edits a second apart are twenty
// reverts, none delayed.
func BenchmarkDriftPersonEdits(b *testing.B) {
	for _, bc := range []struct {
		name  string
		edits int
	}{{"20-different-edits-1s-apart", 20}, {"five-edits", 5}} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				startOperator(b, b.TempDir())
				ns := namespace(b)
				srv := gittest.NewServer(b, gittest.Options{})
				srv.CreateRepo("web").Commit("main", "deployment", map[string]string{"deploy.yaml": personDeployment})
				createPair(b, env.Client, ns, "web", srv.HTTPURL("web"))
				waitAllReady(b, ns, []string{"web"}, 5*time.Minute)
				b.StartTimer()
				latencies, reverted := personEdits(b, client.ObjectKey{Namespace: ns, Name: "web"}, bc.edits, 30*time.Second)
				b.StopTimer()
				p50, p95 := percentile(latencies, 0.5), percentile(latencies, 0.95)
				b.ReportMetric(float64(reverted), "reverted")
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
				b.Logf("%d edits: %d reverted within 30s; p50 %v, p95 %v, max %v", bc.edits, reverted, p50, p95, percentile(latencies, 1))
			}
		})
	}
}

// personEdits makes n edits of the image of Deployment key and returns the edit→revert
// latency of each reverted one and how many were reverted before budget (from the first
// edit) ran out.
func personEdits(b *testing.B, key client.ObjectKey, n int, budget time.Duration) ([]time.Duration, int) {
	ctx := context.Background()
	const want = "nginx:1.27"
	var latencies []time.Duration
	end := time.Now().Add(budget)
	for i := 0; i < n && time.Now().Before(end); i++ {
		for {
			deploy := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, deploy); err != nil {
				b.Fatal(err)
			}
			deploy.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("nginx:edit-%d", i)
			err := env.Client.Update(ctx, deploy, client.FieldOwner("kubectl-set"))
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) {
				b.Fatal(err)
			}
		}
		start := time.Now()
		for time.Now().Before(end) {
			deploy := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, key, deploy); err != nil {
				b.Fatal(err)
			}
			if deploy.Spec.Template.Spec.Containers[0].Image == want {
				latencies = append(latencies, time.Since(start))
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Second)
	}
	if len(latencies) == 0 {
		b.Fatalf("no edit of %s reverted within %v", key, budget)
	}
	return latencies, len(latencies)
}

// BenchmarkIdle: 50 Applications x 20 ConfigMaps at interval 1m, then 3 quiet minutes:
// the API requests gitsync makes, by verb, and the process's peak RSS. Set
// GITSYNC_BENCH_IDLE=short for a 30s window (the figures quoted use 3 minutes).
func BenchmarkIdle(b *testing.B) {
	window := 3 * time.Minute
	if os.Getenv("GITSYNC_BENCH_IDLE") == "short" {
		window = 30 * time.Second
	}
	for range b.N {
		b.StopTimer()
		counter, _, _ := startOperator(b, b.TempDir())
		ns := namespace(b)
		deployApps(b, ns, 50, 20, time.Minute)
		time.Sleep(5 * time.Second) // let the last status writes land
		before := counter.Snapshot()
		b.StartTimer()
		time.Sleep(window)
		b.StopTimer()
		counts := counter.Since(before)
		b.ReportMetric(float64(apicount.Total(counts)), "requests")
		b.ReportMetric(float64(apicount.Writes(counts)), "writes")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MiB")
		b.Logf("%v quiet with 50 apps x 20 ConfigMaps: requests %s; peak RSS %d MiB", window, apicount.Format(counts), peakRSS()>>20)
	}
}

// BenchmarkHeap10k: heap in use with 10,000 managed objects (20 Applications x 500 ConfigMaps).
func BenchmarkHeap10k(b *testing.B) {
	for range b.N {
		b.StopTimer()
		startOperator(b, b.TempDir())
		ns := namespace(b)
		start := time.Now()
		deployApps(b, ns, 20, 500, 10*time.Minute)
		elapsed := time.Since(start)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MiB")
		b.Logf("10,000 objects Ready in %v; heap in use %d MiB; peak RSS %d MiB", elapsed.Round(time.Second), ms.HeapInuse>>20, peakRSS()>>20)
	}
}

// peakRSS reads VmHWM (the process's peak resident set) from /proc/self/status.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

var personDeployment = manifests.Deployment("nginx:1.27")
