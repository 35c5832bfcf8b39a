package bench

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/operatortest"
)

// BenchmarkShards100x20 runs the cold-start workload (100 GitRepositories and
// Applications of 20 ConfigMaps, each pair in its own namespace) on one replica and on
// two shards (--shard 0/2 and 1/2), until all are Ready. Per replica it reports the
// Applications it reconciled (made any request in their namespace) and its API requests:
// with two shards each replica reconciles only its half, and no Application is touched
// by both (an error otherwise).
func BenchmarkShards100x20(b *testing.B) {
	const apps, objects = 100, 20
	for _, count := range []int{1, 2} {
		b.Run(fmt.Sprintf("shards=%d", count), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				counters := make([]*apicount.Counter, count)
				for i := range count {
					s := shard.Shard{Index: i, Count: count}
					if count == 1 {
						s = shard.Shard{}
					}
					counters[i], _, _ = operatortest.Run(b, env, operator.Options{Shard: s, Concurrent: 4})
				}
				srv := gittest.NewServer(b, gittest.Options{})
				namespaces := make([]string, apps)
				for i := range apps {
					namespaces[i] = namespace(b)
					files := map[string]string{}
					for j := range objects {
						files[fmt.Sprintf("cm-%02d.yaml", j)] = fmt.Sprintf(
							"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\ndata:\n  value: \"%d\"\n", j, j)
					}
					srv.CreateRepo(fmt.Sprintf("app-%03d", i)).Commit("main", "20 configmaps", files)
				}
				before := make([]map[string]int, count)
				for i, c := range counters {
					before[i] = c.Snapshot()
				}
				start := time.Now()
				b.StartTimer()
				for i, ns := range namespaces {
					createPair(b, env.Client, ns, "app", srv.HTTPURL(fmt.Sprintf("app-%03d", i)))
				}
				for _, ns := range namespaces {
					waitAllReady(b, ns, []string{"app"}, 5*time.Minute)
				}
				b.StopTimer()
				elapsed := time.Since(start)
				b.ReportMetric(elapsed.Seconds(), "all-ready-s")

				reconciled := make([]int, count)
				both := 0
				for _, ns := range namespaces {
					owner := shard.Shard{Count: count}.Of(types.NamespacedName{Namespace: ns, Name: "app"}, nil)
					touched := 0
					for i, c := range counters {
						if apicount.Total(c.InNamespace(ns)) == 0 {
							continue
						}
						touched++
						reconciled[i]++
						if i != owner {
							b.Errorf("replica %d made requests for %s/app, of shard %d", i, ns, owner)
						}
					}
					if touched > 1 {
						both++
					}
				}
				b.ReportMetric(float64(both), "apps-on-both")
				for i, c := range counters {
					counts := c.Since(before[i])
					b.ReportMetric(float64(reconciled[i]), fmt.Sprintf("replica%d-apps", i))
					b.ReportMetric(float64(apicount.Total(counts)), fmt.Sprintf("replica%d-requests", i))
					b.Logf("replica %d of %d: %d applications, requests: %s", i, count, reconciled[i], apicount.Format(counts))
				}
			}
		})
	}
}
