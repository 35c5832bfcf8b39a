package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// BenchmarkBinary measures what a user runs: the built `gitsync run` as its own process
// (with its render workers), authenticated as the installed operator (a ServiceAccount
// token, config/full-privilege's RBAC) against envtest's kube-apiserver + etcd, its requests
// counted from the API server's audit log (auditLog), each Application with its own
// repository served over smart HTTP by `git http-backend`. In one run, in this order:
//
//   - the operator's start → ready to sync (its GitRepository and Application controllers
//     started their workers, by its log's millisecond timestamps), empty namespace;
//   - a GitRepository + Application (7 objects, one a CRD) created together right then →
//     applied (status.lastAppliedRevision), "fresh";
//   - GITSYNC_BENCH_SCALE (default 100x20) GitRepositories + Applications created → all
//     Ready, and the API requests per object;
//   - the API requests in the window after that (GITSYNC_BENCH_IDLE_WINDOW, default 60s),
//     each one listed;
//   - the same new pair on the warm operator;
//   - a commit + gitsync.dev/requested-at on its GitRepository → applied, p50 of 10;
//   - 20 `kubectl set image` edits of a Deployment (a second apart) → reverted, p95;
//   - a restart (SIGTERM, a new process, same storage) → ready to sync.
//
// GITSYNC_BENCH_BINARY_CPUPROFILE=FILE writes CPU profiles of the operator process during
// the cold start (FILE.0, FILE.1, …: `go tool pprof FILE.*`),
// GITSYNC_BENCH_APISERVER_CPUPROFILE=FILE those of the API server.
func BenchmarkBinary(b *testing.B) {
	apps, perApp, idle := scaleOf(b)
	if os.Getenv("GITSYNC_BENCH_IDLE_WINDOW") == "" {
		idle = time.Minute // the window; BenchmarkScale's default is 3m
	}
	for range b.N {
		b.StopTimer()
		srv := gittest.NewServer(b, gittest.Options{})
		ns := namespace(b)
		names := make([]string, apps)
		for i := range names {
			names[i] = fmt.Sprintf("app-%04d", i)
			srv.CreateRepo(names[i]).Commit("main", "configmaps", configMaps(names[i], perApp))
		}
		suffix := time.Now().UnixNano()
		newPair := func(name string) time.Duration {
			srv.CreateRepo(name).Commit("main", "held-out", newAppFiles(fmt.Sprintf("%s%d.bench.gitsync.dev", name, suffix), fmt.Sprintf("%s-%d", name, suffix)))
			return createdToApplied(b, ns, name, srv.HTTPURL(name))
		}
		hot := srv.CreateRepo("hot")
		hot.Commit("main", "0", map[string]string{"cm.yaml": pushedConfigMap(0)})

		audit := newAuditLog(b)
		kubeconfig := binaryKubeconfig(b)
		storage := b.TempDir()

		op := startBinaryOperator(b, kubeconfig, storage)
		startToReady := op.waitReadyToSync(b)
		fresh := newPair("fresh")
		// fresh's Deployment never becomes available (no controllers run here), so its
		// health would be looked at again and again: gone before the cold start, so that
		// the requests at rest are the N Applications'.
		deletePair(b, ns, "fresh")
		createPair(b, env.Client, ns, "hot", srv.HTTPURL("hot"))
		waitAllReady(b, ns, []string{"hot"}, time.Minute)

		// Cold start.
		before, beforeDetail := audit.snapshot()
		cpuBefore, workersBefore := op.cpu()
		sharesBefore := readCPUShares()
		stopProfile := op.cpuProfile(b, "GITSYNC_BENCH_BINARY_CPUPROFILE")
		stopAPIProfile := apiServerProfile(b, "GITSYNC_BENCH_APISERVER_CPUPROFILE")
		stopProgress := progress(b, ns, time.Now())
		start := time.Now()
		b.StartTimer()
		createPairs(b, ns, names, srv)
		waitAllReady(b, ns, names, 30*time.Minute)
		b.StopTimer()
		cold := time.Since(start)
		coldCounts, coldDetail := audit.since(before, beforeDetail)
		cpuAfter, workersAfter := op.cpu()
		coldCPU, coldWorkersCPU, coldShares := cpuAfter-cpuBefore, workersAfter-workersBefore, readCPUShares().sub(sharesBefore)
		stopProgress()
		stopProfile()
		stopAPIProfile()

		// At rest.
		before, beforeDetail = audit.snapshot()
		stopRecording := audit.record()
		time.Sleep(idle)
		idleRequests := stopRecording()
		idleCounts, _ := audit.since(before, beforeDetail)

		stopRecording = audit.record()
		warm := newPair("warm")
		warmRequests := stopRecording()

		// A push and a sync request (gitsync reconcile source), ten times.
		var pushes []time.Duration
		for v := 1; v <= 10; v++ {
			hot.Commit("main", fmt.Sprint(v), map[string]string{"cm.yaml": pushedConfigMap(v)})
			pushes = append(pushes, requestAndWait(b, ns, "hot", v))
		}
		edits, _ := personEdits(b, client.ObjectKey{Namespace: fmt.Sprintf("warm-%d", suffix), Name: "web"}, 20, time.Minute)

		op.stop(b)
		op = startBinaryOperator(b, kubeconfig, storage)
		restartToReady := op.waitReadyToSync(b)
		op.stop(b)

		objects := float64(apps * perApp)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		pushP50, editP95 := percentile(pushes, 0.5), percentile(edits, 0.95)
		b.ReportMetric(cold.Seconds(), "cold-s")
		b.ReportMetric(float64(apicount.Total(coldCounts))/objects, "cold-req/obj")
		b.ReportMetric(float64(apicount.Total(idleCounts)), "idle-requests")
		b.ReportMetric(ms(fresh), "fresh-new-app-ms")
		b.ReportMetric(ms(warm), "warm-new-app-ms")
		b.ReportMetric(ms(pushP50), "push-p50-ms")
		b.ReportMetric(ms(editP95), "edit-p95-ms")
		b.ReportMetric(ms(startToReady), "start-ready-ms")
		b.ReportMetric(ms(restartToReady), "restart-ready-ms")
		rows := [][2]string{
			{fmt.Sprintf("%d GitRepositories + %d Applications × %d ConfigMaps, one namespace, created → all Ready", apps, apps, perApp), cold.Round(time.Millisecond).String()},
			{"API requests per object (cold)", fmt.Sprintf("%.2f", float64(apicount.Total(coldCounts))/objects)},
			{fmt.Sprintf("API requests in the %v after the cold start", idle), fmt.Sprintf("%d (%d watches renewed)", apicount.Total(idleCounts), idleCounts["watch"])},
			{"a GitRepository + an Application (7 objects, one a CRD) created together on a just-started operator → applied", fresh.Round(time.Millisecond).String()},
			{"the same on the warm operator", warm.Round(time.Millisecond).String()},
			{"commit + requested-at → applied, p50 of 10", pushP50.Round(100 * time.Microsecond).String()},
			{fmt.Sprintf("`kubectl set image` → reverted, p95 of %d", len(edits)), editP95.Round(100 * time.Microsecond).String()},
			{"operator start → ready to sync, empty namespace", startToReady.Round(time.Millisecond).String()},
			{fmt.Sprintf("operator restart → ready to sync, %d Applications", apps+2), restartToReady.Round(time.Millisecond).String()},
		}
		var table strings.Builder
		table.WriteString("the built gitsync run binary in its own process:\n| measure | figure |\n| --- | --- |\n")
		for _, r := range rows {
			fmt.Fprintf(&table, "| %s | %s |\n", r[0], r[1])
		}
		// Printed, not logged: a benchmark's log is cut at 10 lines without -v.
		fmt.Fprint(os.Stdout, table.String())
		fmt.Fprintf(os.Stdout, "cold requests: %s (%s)\n", apicount.Format(coldCounts), apicount.Format(coldDetail))
		fmt.Fprintf(os.Stdout, "cold CPU: the operator process %.1f s, its render workers %.1f s; per object: operator %.2f ms, render workers %.2f ms, API server %.2f ms, etcd %.2f ms; %v\n",
			coldCPU.Seconds(), coldWorkersCPU.Seconds(), ms(coldCPU)/objects, ms(coldWorkersCPU)/objects,
			ms(coldShares.apiServer)/objects, ms(coldShares.etcd)/objects, coldShares)
		fmt.Fprintf(os.Stdout, "requests at rest: %s\n", formatRecorded(idleRequests))
		fmt.Fprintf(os.Stdout, "requests of the warm new pair: %s\n", formatRecorded(warmRequests))
		fmt.Fprintf(os.Stdout, "commit + requested-at → applied: %v\nedits → reverted: %v\n", pushes, edits)
	}
}

// createdToApplied creates a GitRepository and an Application of url together and
// returns the time from the first create to the Application's status.lastAppliedRevision.
func createdToApplied(b *testing.B, ns, name, url string) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	createPair(b, env.Client, ns, name, url)
	for {
		app := &gitsyncv1.Application{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			b.Fatal(err)
		}
		if app.Status.LastAppliedRevision != "" {
			return time.Since(start)
		}
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("%s not applied in 2m: %+v", name, app.Status.Conditions)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func pushedConfigMap(v int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  value: \"%d\"\n", v)
}

// requestAndWait sets gitsync.dev/requested-at on GitRepository name, as `gitsync
// reconcile source` does, and returns the time from that request to the ConfigMap
// "pushed" holding value v.
func requestAndWait(b *testing.B, ns, name string, v int) time.Duration {
	b.Helper()
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, gitsyncv1.RequestedAtAnnotation, time.Now().Format(time.RFC3339Nano))
	start := time.Now()
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprint(v)
	for {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pushed"}, cm); err != nil {
			b.Fatal(err)
		}
		if cm.Data["value"] == want {
			return time.Since(start)
		}
		if time.Since(start) > time.Minute {
			b.Fatalf("commit %d not applied a minute after requested-at", v)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// deletePair deletes Application name (gitsync prunes what it applied) and then its
// GitRepository, and waits until both are gone.
func deletePair(b *testing.B, ns, name string) {
	b.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: ns, Name: name}
	for _, o := range []client.Object{&gitsyncv1.Application{}, &gitsyncv1.GitRepository{}} {
		o.SetNamespace(ns)
		o.SetName(name)
		if err := env.Client.Delete(ctx, o); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if err := env.Client.Get(ctx, key, o); apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%T %s not gone a minute after its deletion", o, key)
			}
		}
	}
}
