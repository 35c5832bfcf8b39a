package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// waitAllReady waits until every named Application in ns is Ready for its current
// generation. It lists them once and then watches (a LIST of 1,000 Applications every
// few hundred milliseconds would load the API server that the benchmark measures).
func waitAllReady(b *testing.B, ns string, names []string, timeout time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	see := func(app *gitsyncv1.Application) {
		if apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition) &&
			app.Status.ObservedGeneration == app.Generation {
			delete(pending, app.Name)
		}
	}
	c, err := watchClient()
	if err != nil {
		b.Fatal(err)
	}
	for len(pending) > 0 {
		list := &gitsyncv1.ApplicationList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatalf("not Ready after %v: %d applications, e.g. %v (%v)", timeout, len(pending), firstKey(pending), err)
		}
		for i := range list.Items {
			see(&list.Items[i])
		}
		if len(pending) == 0 {
			return
		}
		w, err := c.Watch(ctx, &gitsyncv1.ApplicationList{}, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if app, ok := ev.Object.(*gitsyncv1.Application); ok && ev.Type != watch.Deleted && ev.Type != watch.Error {
				see(app)
			}
			if len(pending) == 0 {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			b.Fatalf("not Ready after %v: %d applications, e.g. %v", timeout, len(pending), firstKey(pending))
		}
	}
}

// watchClient is made once (its discovery is not in any measurement).
var watchClient = sync.OnceValues(func() (client.WithWatch, error) {
	return client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
})

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
