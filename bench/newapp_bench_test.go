package bench

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
)

// newAppFiles is the held-out case of a new Application: a CRD of a group of its own
// (so that every run meets a CRD the API server does not serve yet), a Namespace, a
// Deployment, a Service, a Secret, a ConfigMap and a custom resource of that CRD.
func newAppFiles(group, ns string) map[string]string {
	return map[string]string{
		"crd.yaml": manifests.WidgetCRD(group),
		"ns.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: " + ns + "\nspec:\n" +
			"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
			"    spec:\n      containers: [{name: web, image: \"nginx:1.27\"}]\n",
		"svc.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: " + ns + "\nspec:\n  ports: [{port: 80}]\n  selector: {app: web}\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web\n  namespace: " + ns + "\nstringData:\n  password: not-a-secret\n",
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: " + ns + "\ndata:\n  color: blue\n",
		"widget.yaml": "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: big\n  namespace: " + ns + "\nspec:\n  size: 3\n",
	}
}

// BenchmarkNewApplication: the time from creating an Application (its GitRepository has
// its artifact already) to its revision applied (status.lastAppliedRevision), for the
// held-out case (newAppFiles), 10 Applications one after the other, each with a new CRD.
// It prints the median and the slowest.
func BenchmarkNewApplication(b *testing.B) {
	for range b.N {
		b.StopTimer()
		mgr, err := operator.New(operatorConfig(b), env.Scheme, operator.Options{
			MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: b.TempDir(),
			SkipNameValidation: true, DenyEgress: operator.NoEgressGuard,
			RenderWorkers: renderWorkers(b),
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		must := func(err error) {
			if err != nil {
				b.Fatal(err)
			}
		}

		srv := gittest.NewServer(b, gittest.Options{})
		ns := namespace(b)
		c := env.Client
		const runs = 10
		suffix := time.Now().UnixNano()
		for i := range runs {
			repo := srv.CreateRepo(fmt.Sprintf("app-%d", i))
			repo.Commit("main", "held-out", newAppFiles(fmt.Sprintf("n%d-%d.bench.gitsync.dev", suffix, i), fmt.Sprintf("newapp-%d-%d", suffix, i)))
			must(c.Create(ctx, &gitsyncv1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: ns},
				Spec: gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL(fmt.Sprintf("app-%d", i)), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"},
					Interval: &metav1.Duration{Duration: 10 * time.Minute}},
			}))
		}
		for i := range runs {
			waitArtifact(b, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("app-%d", i)})
		}
		var took []time.Duration
		b.StartTimer()
		for i := range runs {
			name := fmt.Sprintf("app-%d", i)
			start := time.Now()
			must(c.Create(ctx, &gitsyncv1.Application{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name},
					Prune: true},
			}))
			app := &gitsyncv1.Application{}
			for {
				must(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app))
				if app.Status.LastAppliedRevision != "" {
					break
				}
				if time.Since(start) > time.Minute {
					b.Fatalf("%s not applied in a minute: %+v", name, app.Status.Conditions)
				}
				time.Sleep(2 * time.Millisecond)
			}
			took = append(took, time.Since(start))
		}
		b.StopTimer()
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		p50 := percentile(took, 0.5)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
		b.Logf("%d new Applications (CRD + CR + 5 objects), created -> applied: p50 %v, max %v, all %v", runs, p50, took[len(took)-1], took)
	}
}

// waitArtifact waits until the GitRepository has its artifact.
func waitArtifact(b *testing.B, key client.ObjectKey) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		repo := &gitsyncv1.GitRepository{}
		if err := env.Client.Get(context.Background(), key, repo); err == nil && repo.Status.Artifact != nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("GitRepository %s has no artifact after a minute", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
