package integration

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// In-process benchmarks of Applications on another cluster: the controllers run in this
// test process against two envtest API servers on this machine (no network between
// them), so the figures compare gitsync's own paths, not a real WAN.

// BenchmarkClusterDriftReverted: an edit of a managed field by another writer on the
// remote cluster, and the same locally, until gitsync's value is read back (p50, p95 of
// b.N edits each, a second apart; polled every 5 ms).
func BenchmarkClusterDriftReverted(b *testing.B) {
	remote := startRemote(b)
	f := newBenchFixture(b, map[string]string{"one.yaml": configMapYAML("one", "1")})
	remote.namespace(b, f.ns)
	remote.register(b, f.ns, "remote")
	f.app(b, "local", "./")
	f.app(b, "remote", "./", onCluster("remote"))
	f.waitSynced(b, "local")
	f.waitSynced(b, "remote")
	// Both Applications write ConfigMap "one": locally in f.ns (app "local") and on the
	// remote cluster in f.ns (app "remote").
	measure := func(c client.Client) []time.Duration {
		var out []time.Duration
		ctx := context.Background()
		for i := range b.N {
			// Edits a second apart: more than 10 in 10 s is a hot loop that the local
			// drift controller backs off from (DESIGN.md "Fights").
			time.Sleep(time.Second)
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "one"}, cm); err != nil {
				b.Fatal(err)
			}
			cm.Data["value"] = fmt.Sprintf("edit-%d", i)
			if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for deadline := start.Add(waitTimeout); ; time.Sleep(5 * time.Millisecond) {
				if err := c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "one"}, cm); err == nil && cm.Data["value"] == "1" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("edit %d not reverted in %s", i, waitTimeout)
				}
			}
			out = append(out, time.Since(start))
		}
		return out
	}
	b.ResetTimer()
	local := measure(env.Client)
	remoteTimes := measure(remote.client)
	b.StopTimer()
	b.ReportMetric(pct(local, 0.5).Seconds()*1000, "local-p50-ms")
	b.ReportMetric(pct(local, 0.95).Seconds()*1000, "local-p95-ms")
	b.ReportMetric(pct(remoteTimes, 0.5).Seconds()*1000, "remote-p50-ms")
	b.ReportMetric(pct(remoteTimes, 0.95).Seconds()*1000, "remote-p95-ms")
}

// BenchmarkClusterMemoryPerCluster: heap in use after 1..5 Clusters with 10
// Applications (one ConfigMap each) synced on each, watched for drift. The Clusters are
// five Cluster objects with their own kubeconfig Secrets over one second API server
// (gitsync makes a Target, clients, a RESTMapper and drift watches per Cluster object,
// as for five clusters; the API servers' own memory is not in this process's heap).
func BenchmarkClusterMemoryPerCluster(b *testing.B) {
	const clusters, appsPer = 5, 10
	remote := startRemote(b)
	files := map[string]string{}
	for i := range appsPer {
		files[fmt.Sprintf("app-%d/cm.yaml", i)] = configMapYAML(fmt.Sprintf("cm-%d", i), "v")
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for range b.N {
		base := heap()
		var after []uint64
		for k := range clusters {
			f := newBenchFixture(b, files)
			remote.namespace(b, f.ns)
			name := fmt.Sprintf("c%d", k)
			remote.register(b, f.ns, name)
			for i := range appsPer {
				f.app(b, fmt.Sprintf("app-%d", i), fmt.Sprintf("./app-%d", i), onCluster(name))
			}
			for i := range appsPer {
				f.waitSynced(b, fmt.Sprintf("app-%d", i))
			}
			after = append(after, heap())
		}
		for k, h := range after {
			b.ReportMetric(float64(int64(h)-int64(base))/(1<<20), fmt.Sprintf("heap-MiB-%dclusters", k+1))
		}
		b.ReportMetric(float64(int64(after[clusters-1])-int64(after[0]))/float64(clusters-1)/(1<<10), "KiB/extra-cluster")
	}
}

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p+0.5)]
}

// benchFixture is a Git repository, its GitRepository and Applications in a fresh
// namespace, for benchmarks (appFixture's helpers take a *testing.T).
type benchFixture struct {
	ns, sha string
}

func newBenchFixture(b *testing.B, files map[string]string) *benchFixture {
	b.Helper()
	ns := env.Namespace(b)
	srv := gittest.NewServer(b, gittest.Options{})
	sha := srv.CreateRepo("app").Commit("main", "initial", files)
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Interval: &metav1.Duration{Duration: time.Minute}}}
	if err := env.Client.Create(context.Background(), repo); err != nil {
		b.Fatal(err)
	}
	return &benchFixture{ns: ns, sha: sha}
}

func (f *benchFixture) app(b *testing.B, name, path string, mutate ...func(*gitsyncv1.Application)) {
	b.Helper()
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}, Path: path}}
	for _, m := range mutate {
		m(app)
	}
	if err := env.Client.Create(context.Background(), app); err != nil {
		b.Fatal(err)
	}
}

func (f *benchFixture) waitSynced(b *testing.B, name string) {
	b.Helper()
	NewWithT(b).Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + f.sha))
	}).WithTimeout(2 * waitTimeout).WithPolling(pollInterval).Should(Succeed())
}
