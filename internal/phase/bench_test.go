package phase

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// BenchmarkOrderedSync measures a 3-wave sync of 100 objects (each wave: 32 ConfigMaps
// and a Deployment) with a PreSync hook, from the hook's completion to the last wave
// applied. A helper plays the kubelet: it marks the hook and each Deployment done as
// soon as it exists, so what is measured is gitsync's overhead per wave.
func BenchmarkOrderedSync(b *testing.B) {
	ctx := context.Background()
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		ns := env.Namespace(b)
		var objs []*unstructured.Unstructured
		for w := 0; w < 3; w++ {
			wave := fmt.Sprintf(`gitsync.dev/sync-wave: "%d"`, w)
			for c := 0; c < 32; c++ {
				objs = append(objs, configMap(b, ns, fmt.Sprintf("w%d-cm%d", w, c), wave))
			}
			objs = append(objs, deployment(b, ns, fmt.Sprintf("w%d-web", w), wave))
		}
		objs = append(objs, job(b, ns, "migrate", `gitsync.dev/hook: PreSync`))
		plan := mustPlan(b, objs...)

		hookDone := make(chan time.Time, 1)
		stop := make(chan struct{})
		go playKubelet(ctx, ns, hookDone, stop)
		r := runner(ns)
		if _, err := r.Run(ctx, plan, Options{Hooks: true}); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		close(stop)
		samples = append(samples, end.Sub(<-hookDone))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Milliseconds()), "ms-hook-to-last-wave")
	b.ReportMetric(float64(samples[len(samples)/2].Milliseconds())/3, "ms-per-wave")
}

// playKubelet completes the hook Job and makes each Deployment available as soon as it
// appears; it sends the time the hook was completed.
func playKubelet(ctx context.Context, ns string, hookDone chan<- time.Time, stop <-chan struct{}) {
	done := map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		if !done["migrate"] {
			if kubelet.FinishJob(ctx, env.Client, ns, "migrate", true) == nil {
				done["migrate"] = true
				hookDone <- time.Now()
			}
			continue
		}
		for w := 0; w < 3; w++ {
			name := fmt.Sprintf("w%d-web", w)
			if !done[name] && kubelet.MakeAvailable(ctx, env.Client, ns, name) == nil {
				done[name] = true
			}
		}
	}
}
