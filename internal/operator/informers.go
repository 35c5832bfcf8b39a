package operator

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

const (
	// reconnectInterval is how often an informer retries an API server it cannot reach.
	reconnectInterval = 250 * time.Millisecond
	// reconnectPatience is how long it retries before handing the error to the reflector.
	reconnectPatience = 30 * time.Second
)

// newInformer makes the cache's informers with a patientListerWatcher. client-go's
// reflector backs off after every failed list or watch (0.8 s doubling to 30 s, with
// jitter, reset only after 2 minutes of health) and offers no option to change it through
// controller-runtime: after an API server restart of ~10 s the caches stayed stale for
// several seconds more (27–32 s after longer outages), and nothing new was applied
// meanwhile.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(patientListerWatcher{toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
}

// patientListerWatcher retries a list or watch that failed because the API server could
// not be reached, every reconnectInterval for up to reconnectPatience, so that the
// reflector reconnects within reconnectInterval of the API server's return instead of
// after its own backoff.
type patientListerWatcher struct {
	lw toolscache.ListerWatcherWithContext
}

func (p patientListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), opts)
}

func (p patientListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return p.WatchWithContext(context.Background(), opts)
}

func (p patientListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return retryUnreachable(ctx, func() (runtime.Object, error) { return p.lw.ListWithContext(ctx, opts) })
}

func (p patientListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return retryUnreachable(ctx, func() (watch.Interface, error) { return p.lw.WatchWithContext(ctx, opts) })
}

// retryUnreachable calls f until it succeeds, fails otherwise than by an unreachable API
// server, reconnectPatience passes or ctx ends.
func retryUnreachable[T any](ctx context.Context, f func() (T, error)) (T, error) {
	deadline := time.Now().Add(reconnectPatience)
	for {
		v, err := f()
		if err == nil || !unreachable(err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(reconnectInterval):
		}
	}
}

// unreachable reports whether err says the API server is down or restarting.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err)
}
