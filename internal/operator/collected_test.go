package operator

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// A stopped operator leaves nothing of itself reachable: a process that starts another
// (the tests, the benchmarks' restarts) would otherwise hold both operators' caches.
// The cache stands for them. (A cleanup, not a finalizer: the cache is in cycles, which
// keep a finalizer from ever running.)
func TestStoppedOperatorIsCollected(t *testing.T) {
	collected := make(chan struct{})
	func() {
		mgr, err := New(env.Config, env.Scheme, Options{
			MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: t.TempDir(), SkipNameValidation: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		cache := (*byte)(reflect.ValueOf(mgr.GetCache()).UnsafePointer())
		runtime.AddCleanup(cache, func(done chan struct{}) { close(done) }, collected)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- mgr.Start(ctx) }()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			t.Fatal("the cache did not sync")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the stopped operator's cache is still reachable")
}
