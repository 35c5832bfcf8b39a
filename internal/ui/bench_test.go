package ui_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// Run: go test ./internal/ui/ -run '^$' -bench . -benchtime 5x
// Applications are suspended (their source does not exist; the operator leaves them be).

// parallel runs f(i) for i in [0, n) on 8 goroutines.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func suspendedApp(ns, name string) *gitsyncv1.Application {
	return &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "none"},
			Path: "./", Suspend: true},
	}
}

// pageTime loads url n times and returns the median of navigation start → DOM complete
// (the server's answer, parsing, the deferred script) and of first contentful paint, with
// the selector visible each time.
func pageTime(b *testing.B, ctx context.Context, url, visible string) (dom, paint time.Duration) {
	b.Helper()
	var doms, paints []float64
	for i := 0; i < b.N; i++ {
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		if err := chromedp.Do(tctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(visible))); err != nil {
			cancel()
			b.Fatalf("loading %s: %v", url, err)
		}
		v, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`[performance.getEntriesByType("navigation")[0].domComplete,
			(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime]`))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		doms, paints = append(doms, v[0]), append(paints, v[1])
	}
	med := func(x []float64) time.Duration {
		sort.Float64s(x)
		return time.Duration(x[len(x)/2] * float64(time.Millisecond))
	}
	return med(doms), med(paints)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkApplicationsPage1000 measures the applications page with 1,000 Applications
// in the browser, and the heap the UI server adds to hold them.
func BenchmarkApplicationsPage1000(b *testing.B) {
	ctx := browser.New(b, 1280, 900)
	ns := env.Namespace(b)
	parallel(b, 1000, func(i int) error {
		return env.Client.Create(context.Background(), suspendedApp(ns, fmt.Sprintf("app-%04d", i)))
	})
	// Let the operator's first pass over them end, so that its work counts less as the UI's.
	time.Sleep(5 * time.Second)
	// The heap of one UI server: four of them, each with its own cache, divided by four
	// (the operator in the same process makes a single difference noisy).
	before := heapInUse()
	srv := startUI(b, env.Config, ui.Options{Namespaces: []string{ns}})
	for range 3 {
		startUI(b, env.Config, ui.Options{Namespaces: []string{ns}})
	}
	after := heapInUse()
	// Log the browser in (the launch token's cookie) before measuring.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.LoginURL("/")), chromedp.WaitVisible(chromedp.CSS(`tr[data-name="app-0999"]`))); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	dom, paint := pageTime(b, ctx, srv.URL+"/", `tr[data-name="app-0999"]`)
	b.ReportMetric(float64(int64(after)-int64(before))/4/(1<<20), "MiB-ui-heap")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#apps-body tr[data-name]").length`))
	if err != nil || n != 1000 {
		b.Fatalf("the page shows %d applications (%v), want 1000", n, err)
	}
	b.ReportMetric(float64(dom.Milliseconds()), "ms-dom-complete")
	b.ReportMetric(float64(paint.Milliseconds()), "ms-first-paint")
}

// BenchmarkApplicationPage2000Objects measures one Application's page whose inventory
// holds 2,000 objects.
func BenchmarkApplicationPage2000Objects(b *testing.B) {
	ctx := browser.New(b, 1280, 900)
	ns := env.Namespace(b)
	bg := context.Background()
	parallel(b, 2000, func(i int) error {
		return env.Client.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: ns},
			Data: map[string]string{"i": fmt.Sprint(i)}})
	})
	app := suspendedApp(ns, "big")
	if err := env.Client.Create(bg, app); err != nil {
		b.Fatal(err)
	}
	inv := &gitsyncv1.Inventory{}
	for i := 0; i < 2000; i++ {
		inv.Entries = append(inv.Entries, gitsyncv1.InventoryEntry{ID: fmt.Sprintf("%s_cm-%04d__ConfigMap", ns, i), V: "v1"})
	}
	// Set the inventory once the controller has seen the suspended app (it keeps it).
	time.Sleep(2 * time.Second)
	if err := env.Client.Get(bg, client.ObjectKeyFromObject(app), app); err != nil {
		b.Fatal(err)
	}
	app.Status.Inventory = inv
	if err := env.Client.Status().Update(bg, app); err != nil {
		b.Fatal(err)
	}
	srv := startUI(b, env.Config, ui.Options{Namespaces: []string{ns}})
	url := srv.URL + "/apps/" + ns + "/big"
	last := `button.node[data-id="ConfigMap/` + ns + `/cm-1999"]`
	// The first load (which logs the browser in) starts the ConfigMap informer; the
	// benchmark measures the cached UI.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.LoginURL("/apps/"+ns+"/big")), chromedp.WaitVisible(chromedp.CSS(last))); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	dom, paint := pageTime(b, ctx, url, last)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button.node").length`))
	if err != nil || n != 2000 {
		b.Fatalf("the tree shows %d objects (%v), want 2000", n, err)
	}
	b.ReportMetric(float64(dom.Milliseconds()), "ms-dom-complete")
	b.ReportMetric(float64(paint.Milliseconds()), "ms-first-paint")
}
