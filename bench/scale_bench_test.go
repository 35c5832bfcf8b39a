package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// scaleOf reads the size of BenchmarkScale: GITSYNC_BENCH_SCALE=<apps>x<objects>
// (default 100x20, the CI-sized run; 1000x20 is the workload, run by hand with
// -timeout 60m) and GITSYNC_BENCH_IDLE_WINDOW (a Go duration, default 3m). To compare
// settings, GITSYNC_BENCH_CONCURRENT and GITSYNC_BENCH_QPS override the operator's
// --concurrent and --kube-api-qps defaults; GITSYNC_BENCH_COLD_CPUPROFILE=FILE and
// GITSYNC_BENCH_RESTART_CPUPROFILE=FILE profile this process during the cold phase and
// the first restart; GITSYNC_BENCH_HEAPPROFILE=FILE writes the heap in
// use at rest, after the cold start (FILE.cold) and after the restart (FILE), where
// heap-MiB/1000obj is measured, and at the largest live heap of the cold start
// (FILE.peak) and the restart (FILE.restart-peak; `go tool pprof -top -inuse_space
// FILE`); GITSYNC_BENCH_APISERVER_CPUPROFILE=FILE profiles the API server during the
// cold phase (FILE.0, FILE.1, …: `go tool pprof FILE.*`); GITSYNC_BENCH_PROGRESS=1
// prints every 2 s of the cold phase how many sources have fetched and how many
// Applications are Ready; GITSYNC_BENCH_MEMTRACE=1 prints what the resident set of
// each phase was made of at its largest (see memTrace).
func scaleOf(b *testing.B) (apps, objects int, idle time.Duration) {
	apps, objects, idle = 100, 20, 3*time.Minute
	if s := os.Getenv("GITSYNC_BENCH_SCALE"); s != "" {
		a, o, ok := strings.Cut(s, "x")
		var err1, err2 error
		apps, err1 = strconv.Atoi(a)
		objects, err2 = strconv.Atoi(o)
		if !ok || err1 != nil || err2 != nil || apps < 1 || objects < 1 {
			b.Fatalf("GITSYNC_BENCH_SCALE=%q: want <apps>x<objects>, e.g. 1000x20", s)
		}
	}
	if s := os.Getenv("GITSYNC_BENCH_IDLE_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("GITSYNC_BENCH_IDLE_WINDOW: %v", err)
		}
		idle = d
	}
	return apps, objects, idle
}

// BenchmarkScale is the cold-path workload: N Applications of K ConfigMaps
// each (see scaleOf), plus one "hot" Application whose repository is pushed to.
//
//  1. create → all Ready: wall time, requests per object by verb; meanwhile a push to
//     the hot Application (webhook) → its new value applied;
//  2. operator restart with nothing changed in Git: time until every Application was
//     reconciled again and the queues are empty, requests and writes;
//  3. idle window: requests and CPU (of this whole process);
//  4. another restart, with a push to the hot Application as soon as the receiver
//     listens: push → applied while the others start;
//  5. peak RSS of the process and heap in use per 1,000 objects.
func BenchmarkScale(b *testing.B) {
	apps, perApp, idle := scaleOf(b)
	objects := apps * perApp
	if os.Getenv("GITSYNC_BENCH_HEAPPROFILE") != "" {
		// The default (a sample per 512 KiB) is too coarse to tell structures of a few
		// MiB apart.
		runtime.MemProfileRate = 4096
	}
	for range b.N {
		b.StopTimer()
		resetPeakRSS()
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		baseLive := liveHeap()
		// The peak resident set of each phase (VmHWM, started over at each phase).
		var phasePeaks []string
		var peak int64
		trace := startMemTrace()
		endPhase := func(name string) {
			p := peakRSS()
			peak = max(peak, p)
			phasePeaks = append(phasePeaks, fmt.Sprintf("%s %d MiB", name, p>>20))
			if at := trace.stop(); at != "" {
				b.Logf("%s, at its largest resident set: %s", name, at)
			}
			// The next phase starts as a new operator process would: without the
			// stopped one's garbage in its heap (it would otherwise count twice).
			runtime.GC()
			debug.FreeOSMemory()
			resetPeakRSS()
			trace = startMemTrace()
		}

		srv := gittest.NewServer(b, gittest.Options{})
		ns := namespace(b)
		names := make([]string, apps)
		for i := range names {
			names[i] = fmt.Sprintf("app-%04d", i)
			srv.CreateRepo(names[i]).Commit("main", "configmaps", configMaps(names[i], perApp))
		}
		hot := newHotApp(b, srv, ns)
		storage := b.TempDir()

		// 1. Cold start.
		op := startScaleOperator(b, storage)
		hot.create(b)
		waitAllReady(b, ns, []string{hotName}, time.Minute)
		before, beforeDetail := op.counter.Snapshot(), op.counter.DetailSnapshot()
		start := time.Now()
		stopProfile := cpuProfile(b, "GITSYNC_BENCH_COLD_CPUPROFILE")
		stopAPIProfile := apiServerProfile(b, "GITSYNC_BENCH_APISERVER_CPUPROFILE")
		stopProgress := progress(b, ns, start)
		stopPeak := peakHeapProfile(b, ".peak")
		sharesBefore := readCPUShares()
		b.StartTimer()
		createPairs(b, ns, names, srv)
		pushDuringCold := hot.pushAndWait(b, op.webhook, 1)
		waitAllReady(b, ns, names, 30*time.Minute)
		b.StopTimer()
		coldShares := readCPUShares().sub(sharesBefore)
		stopProfile()
		stopAPIProfile()
		stopProgress()
		stopPeak()
		workerPeak := workersPeakRSS() // before the operator stops its workers
		cold := time.Since(start)
		coldCounts, coldDetail := op.counter.Since(before), op.counter.DetailSince(beforeDetail)
		time.Sleep(2 * time.Second) // the last status writes land
		heapProfile(b, ".cold")
		op.stop()
		endPhase("cold start")

		// 2. Restart, nothing changed in Git.
		stopRestartPeak := peakHeapProfile(b, ".restart-peak")
		stopProfile = cpuProfile(b, "GITSYNC_BENCH_RESTART_CPUPROFILE")
		op = startScaleOperator(b, storage)
		before = map[string]int{} // a new counter: all its requests are the restart's
		restart := op.waitReconciled(b, apps+1, op.started, 10*time.Minute)
		stopProfile()
		restartCounts, restartDetail := op.counter.Since(before), op.counter.DetailSince(map[string]int{})
		stopRestartPeak()
		endPhase("restart")

		// 3. Idle.
		time.Sleep(2 * time.Second)
		runtime.GC()
		var steady runtime.MemStats
		runtime.ReadMemStats(&steady)
		steadyLive := liveHeap()
		heapProfile(b, "")
		before = op.counter.Snapshot()
		cpuBefore := cpuTime()
		time.Sleep(idle)
		idleCPU := cpuTime() - cpuBefore
		idleCounts := op.counter.Since(before)
		op.stop()
		endPhase("idle")

		// 4. Restart with a push to the hot Application.
		op = startScaleOperator(b, storage)
		pushDuringRestart := hot.pushAndWait(b, op.webhook, 2)
		op.waitReconciled(b, apps+1, op.started, 10*time.Minute)
		op.stop()
		endPhase("restart with a push")
		trace.stop()

		perObject := func(counts map[string]int) float64 { return float64(apicount.Total(counts)) / float64(objects) }
		heapPer1000 := (float64(steady.HeapInuse) - float64(base.HeapInuse)) / float64(objects) * 1000
		livePer1000 := (float64(steadyLive) - float64(baseLive)) / float64(objects) * 1000
		b.ReportMetric(cold.Seconds(), "cold-s")
		b.ReportMetric(perObject(coldCounts), "cold-req/obj")
		b.ReportMetric(restart.Seconds(), "restart-s")
		b.ReportMetric(float64(apicount.Total(restartCounts)), "restart-requests")
		b.ReportMetric(float64(apicount.Writes(restartCounts)), "restart-writes")
		b.ReportMetric(float64(apicount.Total(idleCounts)), "idle-requests")
		b.ReportMetric(100*idleCPU.Seconds()/idle.Seconds(), "idle-cpu-%")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(workerPeak)/(1<<20), "worker-peak-rss-MiB")
		b.ReportMetric(heapPer1000/(1<<20), "heap-MiB/1000obj")
		b.ReportMetric(livePer1000/(1<<20), "live-MiB/1000obj")
		b.ReportMetric(float64(pushDuringCold.Milliseconds()), "push-cold-ms")
		b.ReportMetric(float64(pushDuringRestart.Milliseconds()), "push-restart-ms")
		b.Logf("%d apps x %d ConfigMaps: create -> all Ready %v, %.2f requests/object: %s",
			apps, perApp, cold.Round(time.Millisecond), perObject(coldCounts), apicount.Format(coldCounts))
		b.Logf("cold requests by resource: %s", apicount.Format(coldDetail))
		b.Logf("cold CPU: %v", coldShares)
		b.Logf("restart, nothing changed: %v, requests %s (%s)", restart.Round(time.Millisecond), apicount.Format(restartCounts),
			apicount.Format(restartDetail))
		b.Logf("idle %v: requests %s, CPU %v (%.2f%% of a core)", idle, apicount.Format(idleCounts), idleCPU.Round(time.Millisecond),
			100*idleCPU.Seconds()/idle.Seconds())
		b.Logf("push -> applied: %v while %d Applications are created, %v during a restart", pushDuringCold.Round(time.Millisecond),
			apps, pushDuringRestart.Round(time.Millisecond))
		b.Logf("render workers' peak RSS in the cold start: %d MiB (the largest worker; 0: rendering in process)", workerPeak>>20)
		b.Logf("peak RSS %d MiB (%s); heap in use %.1f MiB per 1,000 objects (%d MiB at rest), of which live objects %.1f MiB (%d MiB)",
			peak>>20, strings.Join(phasePeaks, ", "), heapPer1000/(1<<20), steady.HeapInuse>>20, livePer1000/(1<<20), steadyLive>>20)
	}
}

func configMaps(app string, n int) map[string]string {
	files := map[string]string{}
	for j := range n {
		files[fmt.Sprintf("cm-%04d.yaml", j)] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%04d\ndata:\n  value: \"%d\"\n", app, j, j)
	}
	return files
}

// createPairs creates a GitRepository and an Application per name, 8 at a time.
func createPairs(b *testing.B, ns string, names []string, srv *gittest.Server) {
	b.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			createPair(b, env.Client, ns, name, srv.HTTPURL(name))
		})
	}
	wg.Wait()
}

// scaleOperator is a running operator with its requests counted and its webhook
// receiver's address.
type scaleOperator struct {
	counter    *apicount.Counter
	webhook    string
	stop       func()
	reconciled float64
	started    time.Time
}

func startScaleOperator(b *testing.B, storage string) *scaleOperator {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	counter := apicount.New()
	cfg := operatorConfig(b)
	counter.Wrap(cfg)
	opts := operator.Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: storage,
		SkipNameValidation: true, WebhookBindAddress: addr, DenyEgress: operator.NoEgressGuard,
		RenderWorkers: renderWorkers(b),
	}
	// The operator's defaults, unless a run compares others.
	if v, err := strconv.Atoi(os.Getenv("GITSYNC_BENCH_CONCURRENT")); err == nil {
		opts.Concurrent = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("GITSYNC_BENCH_QPS"), 32); err == nil {
		opts.KubeAPIQPS = float32(v)
	}
	mgr, err := operator.New(cfg, env.Scheme, opts)
	if err != nil {
		b.Fatal(err)
	}
	op := &scaleOperator{counter: counter, webhook: addr,
		reconciled: applicationReconciles()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	op.started = time.Now()
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			b.Error(err)
		}
	}()
	var once sync.Once
	op.stop = func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(op.stop)
	return op
}

// waitReconciled waits until this operator's Application controller has reconciled n
// times and no request went out for a second; it returns when the later of the n-th
// reconcile and the last request before that quiet second happened, measured from
// start (a restart's reconciles mostly send nothing: the requests alone would end it
// early).
func (op *scaleOperator) waitReconciled(b *testing.B, n int, start time.Time, timeout time.Duration) time.Duration {
	b.Helper()
	deadline := time.Now().Add(timeout)
	last, lastChange := -1, time.Now()
	var doneAt time.Time
	for {
		total := apicount.Total(op.counter.Snapshot())
		if total != last {
			last, lastChange = total, time.Now()
		}
		done := applicationReconciles() - op.reconciled
		if done >= float64(n) && doneAt.IsZero() {
			doneAt = time.Now()
		}
		if !doneAt.IsZero() && time.Since(lastChange) >= time.Second {
			if doneAt.After(lastChange) {
				return doneAt.Sub(start)
			}
			return lastChange.Sub(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %v: %v of %d reconciles", timeout, done, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// applicationReconciles is how many Application reconciles ended in this process (the
// count of gitsync_reconcile_duration_seconds): cheaper to read every few milliseconds
// than gathering every metric, which makes a series per Application.
func applicationReconciles() float64 {
	var m dto.Metric
	if err := kit.ReconcileDuration.WithLabelValues(gitsyncv1.ApplicationKind).(prometheus.Metric).Write(&m); err != nil {
		return -1
	}
	return float64(m.GetHistogram().GetSampleCount())
}

const hotName = "hot"

// hotApp is an Application of one ConfigMap whose GitRepository takes webhooks.
type hotApp struct {
	srv   *gittest.Server
	repo  *gittest.Repo
	ns    string
	token []byte
}

func newHotApp(b *testing.B, srv *gittest.Server, ns string) *hotApp {
	h := &hotApp{srv: srv, repo: srv.CreateRepo(hotName), ns: ns, token: []byte("bench-token")}
	h.repo.Commit("main", "0", h.files(0))
	return h
}

func (h *hotApp) files(v int) map[string]string {
	return map[string]string{"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  value: \"%d\"\n", v)}
}

func (h *hotApp) create(b *testing.B) {
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: h.ns}, Data: map[string][]byte{"token": h.token}},
		&gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: hotName, Namespace: h.ns},
			Spec: gitsyncv1.GitRepositorySpec{
				URL: h.srv.HTTPURL(hotName), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"},
				Interval:         &metav1.Duration{Duration: 10 * time.Minute},
				WebhookSecretRef: &gitsyncv1.LocalObjectReference{Name: "hook"},
			},
		},
		&gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: hotName, Namespace: h.ns},
			Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: hotName},
				Interval: &metav1.Duration{Duration: 10 * time.Minute}},
		},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
}

// pushAndWait commits value v, delivers the push webhook to the receiver at addr (once
// it listens) and returns the time from the delivery to the new value in the cluster.
func (h *hotApp) pushAndWait(b *testing.B, addr string, v int) time.Duration {
	b.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("webhook receiver at %s not listening", addr)
		}
	}
	head := h.repo.Commit("main", fmt.Sprint(v), h.files(v))
	body := []byte(`{"url": "` + h.srv.HTTPURL(hotName) + `", "ref": "refs/heads/main"}`)
	mac := hmac.New(sha256.New, h.token)
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hook/generic", bytes.NewReader(body))
	req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("webhook answered %d", resp.StatusCode)
	}
	want := fmt.Sprint(v)
	got := &corev1.ConfigMap{}
	var fetched time.Duration
	for {
		if fetched == 0 {
			repo := &gitsyncv1.GitRepository{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: hotName}, repo); err == nil &&
				repo.Status.Artifact != nil && strings.HasSuffix(repo.Status.Artifact.Revision, head) {
				fetched = time.Since(start)
				b.Logf("push %d: the new revision fetched after %v", v, fetched.Round(time.Millisecond))
			}
		}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "pushed"}, got); err != nil {
			b.Fatal(err)
		}
		if got.Data["value"] == want {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("push %d not applied in 10m", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cpuProfile writes a CPU profile of this process (the operator, the Git server and
// the benchmark's own watch) from now until the returned func is called into the file
// the environment variable names, when set.
func cpuProfile(b *testing.B, variable string) (stop func()) {
	path := os.Getenv(variable)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// progress prints, every 2 s until the returned func is called, how many sources of
// ns have an artifact and how many Applications are Ready, when GITSYNC_BENCH_PROGRESS
// is set: where a cold start spends its time.
func progress(b *testing.B, ns string, start time.Time) (stop func()) {
	if os.Getenv("GITSYNC_BENCH_PROGRESS") == "" {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ctx := context.Background()
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
			repos, apps := &gitsyncv1.GitRepositoryList{}, &gitsyncv1.ApplicationList{}
			if env.Client.List(ctx, repos, client.InNamespace(ns)) != nil || env.Client.List(ctx, apps, client.InNamespace(ns)) != nil {
				continue
			}
			fetched, ready := 0, 0
			for i := range repos.Items {
				if repos.Items[i].Status.Artifact != nil {
					fetched++
				}
			}
			for i := range apps.Items {
				if apimeta.IsStatusConditionTrue(apps.Items[i].Status.Conditions, gitsyncv1.ReadyCondition) {
					ready++
				}
			}
			fmt.Fprintf(os.Stderr, "%5.1fs: %d of %d sources fetched, %d of %d Applications Ready\n",
				time.Since(start).Seconds(), fetched, len(repos.Items), ready, len(apps.Items))
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// apiServerProfile writes CPU profiles of the API server, taken through its
// /debug/pprof/profile endpoint as the test env's admin, from now until the returned
// func is called, into the files the environment variable names followed by .0, .1, …
// (one per 5 s; `go tool pprof FILE.*` reads them as one), when set.
func apiServerProfile(b *testing.B, variable string) (stop func()) {
	path := os.Getenv(variable)
	if path == "" {
		return func() {}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			raw, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", "5").DoRaw(ctx)
			if err != nil {
				return // cancelled: the last slice is lost
			}
			if err := os.WriteFile(fmt.Sprintf("%s.%d", path, i), raw, 0o644); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// heapProfile writes the heap in use, after a collection, into the file
// GITSYNC_BENCH_HEAPPROFILE names followed by suffix, when set.
func heapProfile(b *testing.B, suffix string) {
	path := os.Getenv("GITSYNC_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path + suffix)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// peakHeapProfile writes the heap in use into FILE+suffix (GITSYNC_BENCH_HEAPPROFILE=FILE)
// each time a collection marked a live heap a twentieth larger than the last profile
// written, until the returned func is called: the last one written is within a twentieth
// of the largest live heap (a heap profile shows the heap as of the last collection),
// whose double is the heap goal the collector lets the heap grow to.
func peakHeapProfile(b *testing.B, suffix string) (stop func()) {
	path := os.Getenv("GITSYNC_BENCH_HEAPPROFILE")
	if path == "" {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var written uint64
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > written+written/20 {
				written = v
				f, err := os.Create(path + suffix)
				if err != nil {
					b.Error(err)
					return
				}
				err = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
				if err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// cpuTime is the user and system CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap is the heap the last collection marked live: heap in use less the free
// slots of the spans that hold live objects.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// resetPeakRSS starts VmHWM over from the current resident set (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }
