package image_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/imagereg"
)

// shortestInterval is `gitsync run --min-interval`'s default: the shortest poll a spec
// gets in a default install.
const shortestInterval = 10 * time.Second

// BenchmarkTagToApplied measures, in process (operator, registry and Git server in this
// test binary; the API server is envtest's), a tag pushed to the registry → the commit in
// Git → the Deployment applied with the new image, with no webhook and no request: the
// ImageRepository polls every 10s. Five tags per run; the medians are reported.
// Run: go test ./internal/controller/image/ -run '^$' -bench TagToApplied -benchtime=1x
func BenchmarkTagToApplied(b *testing.B) {
	ctx := context.Background()
	ns := env.Namespace(b)
	reg := imagereg.New(b, "", "")
	image := reg.Image("bench/app")
	reg.Push(b, "bench/app", "1.0.0")
	srv := gittest.NewServer(b, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "initial", map[string]string{"deploy/app.yaml": deployment(image, ns)})
	interval := &metav1.Duration{Duration: shortestInterval}
	for _, o := range []client.Object{
		&gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}, Spec: gitsyncv1.GitRepositorySpec{
			URL: srv.HTTPURL("fleet"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}}},
		&gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "fleet"}, Path: "./deploy"}},
		&gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ImageRepositorySpec{
			Image: image, Insecure: true, Interval: interval}},
		&gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ImagePolicySpec{
			ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "app"},
			Policy:             gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: "^1.0.0"}}}},
		&gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"}, Spec: gitsyncv1.ImageUpdateAutomationSpec{
			SourceRef: gitsyncv1.ImageUpdateSourceReference{Name: "fleet"}, Interval: interval,
			GitSpec: gitsyncv1.ImageUpdateGitSpec{Commit: gitsyncv1.CommitSpec{Author: gitsyncv1.CommitUser{Name: "gitsync", Email: "bot@example.com"}}},
			Update:  &gitsyncv1.UpdateStrategy{Path: "./deploy"}}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	applied := func(tag string) bool {
		d := &appsv1.Deployment{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d) == nil &&
			d.Spec.Template.Spec.Containers[0].Image == image+":"+tag
	}
	waitFor := func(what string, done func() bool) {
		deadline := time.Now().Add(2 * time.Minute)
		for !done() {
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the first apply", func() bool { return applied("1.0.0") })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var toCommit, toApplied []float64
		for round := 1; round <= 5; round++ {
			tag := fmt.Sprintf("1.%d.%d", i+1, round)
			head := repo.Head("main")
			pushed := time.Now()
			reg.Push(b, "bench/app", tag)
			waitFor("the commit of "+tag, func() bool { return repo.Head("main") != head })
			toCommit = append(toCommit, time.Since(pushed).Seconds())
			waitFor("the apply of "+tag, func() bool { return applied(tag) })
			toApplied = append(toApplied, time.Since(pushed).Seconds())
		}
		b.ReportMetric(median(toCommit), "s-tag-to-commit(median)")
		b.ReportMetric(median(toApplied), "s-tag-to-applied(median)")
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkMemoryHundredRepositories measures, in process, what 100 ImageRepositories of
// 1,000 tags each cost the operator: the Go heap in use after they are all scanned (the
// whole test binary's, after a GC, minus before), and the bytes of their stored lists.
// Run: go test ./internal/controller/image/ -run '^$' -bench MemoryHundred -benchtime=1x
func BenchmarkMemoryHundredRepositories(b *testing.B) {
	ctx := context.Background()
	reg := imagereg.New(b, "", "")
	tags := make([]string, 1000)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.0.%d", i)
	}
	// Ten registry repositories; each ImageRepository lists one of them.
	for r := 0; r < 10; r++ {
		reg.Push(b, fmt.Sprintf("app%d", r), tags...)
	}
	for i := 0; i < b.N; i++ {
		ns := env.Namespace(b)
		before := heapInUse()
		for n := 0; n < 100; n++ {
			o := &gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%03d", n)},
				Spec: gitsyncv1.ImageRepositorySpec{Image: reg.Image(fmt.Sprintf("app%d", n%10)), Insecure: true}}
			if err := env.Client.Create(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(5 * time.Minute)
		for {
			list := &gitsyncv1.ImageRepositoryList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			scanned := 0
			for _, r := range list.Items {
				if s := r.Status.LastScanResult; s != nil && s.TagCount == 1000 {
					scanned++
				}
			}
			if scanned == 100 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of 100 repositories scanned", scanned)
			}
			time.Sleep(100 * time.Millisecond)
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/(1<<20), "MiB-heap-delta")
		b.ReportMetric(float64(storedBytes(ns))/(1<<10), "KiB-stored")
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// storedBytes sums the tag lists of namespace ns in the operator's storage (the suite's
// operator keeps it under the temporary directory TestMain made).
func storedBytes(ns string) int64 {
	var total int64
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "gitsync-image-*", "storage", "imagetags", ns+"_*.json"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil {
			total += fi.Size()
		}
	}
	return total
}
