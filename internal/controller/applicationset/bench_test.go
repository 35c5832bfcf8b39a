package applicationset

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

// TestMain starts an API server only when benchmarks run: the package has no tests, and
// `go test ./...` need not pay for one.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Run(m, &env, nil))
}

// standIn plays the Application controller for the benchmark (nothing is synced): a
// released Application (autoSync not false) is at once Synced and Healthy at its source's
// revision and generation; a held one records its generation only. It writes with the
// uncounted admin client, so the counts are the ApplicationSet controller's own.
type standIn struct {
	reader client.Reader
}

func (s *standIn) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	app := &gitsyncv1.Application{}
	if err := s.reader.Get(ctx, req.NamespacedName, app); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	repo := &gitsyncv1.GitRepository{}
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Spec.SourceRef.Name}, repo); err != nil || repo.Status.Artifact == nil {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	base := client.MergeFrom(app.DeepCopy())
	app.Status.ObservedGeneration = app.Generation
	if app.Spec.AutoSync == nil || *app.Spec.AutoSync {
		rev := repo.Status.Artifact.Revision
		app.Status.LastAppliedRevision, app.Status.LastAttemptedRevision = rev, rev
		app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: rev}
		app.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusHealthy}
	}
	return reconcile.Result{}, client.IgnoreNotFound(env.Client.Status().Patch(ctx, app, base))
}

// BenchmarkApplicationSet100 (in process: one envtest API server, the ApplicationSet and
// GitRepository controllers in one manager, a stand-in that marks health at once): one
// set generates 100 Applications (50 list elements × 2 Clusters) → all created and the
// first rollout complete; a new commit → a rollout of 4 steps completed; API requests of
// the manager (the stand-in's writes are not counted) for each, and while idle after.
func BenchmarkApplicationSet100(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchOnce(b)
	}
}

func benchOnce(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(b)
	counter := apicount.New()
	cfg := rest.CopyConfig(env.Config)
	counter.Wrap(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		b.Fatal(err)
	}
	storage := b.TempDir()
	fetcher, err := source.NewFetcher(storage)
	if err != nil {
		b.Fatal(err)
	}
	repos := &sources.GitRepositoryReconciler{Client: mgr.GetClient(), Fetcher: fetcher, Recorder: mgr.GetEventRecorder("bench")}
	if err := repos.SetupWithManager(mgr, sources.GitRepositoryOptions{MaxConcurrentReconciles: 2, RetryBase: 100 * time.Millisecond, RetryMax: time.Second}); err != nil {
		b.Fatal(err)
	}
	sets := &Reconciler{Client: mgr.GetClient(), Storage: fetcher}
	if err := sets.SetupWithManager(mgr, Options{MaxConcurrentReconciles: 2, RetryBase: 100 * time.Millisecond, RetryMax: time.Second}); err != nil {
		b.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named(fmt.Sprintf("standin-%s", ns)).For(&gitsyncv1.Application{}).
		Watches(&gitsyncv1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &gitsyncv1.ApplicationList{}
			_ = mgr.GetClient().List(ctx, list, client.InNamespace(o.GetNamespace()))
			var out []reconcile.Request
			for _, a := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&a)})
			}
			return out
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).Complete(&standIn{reader: env.Client}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	srv := gittest.NewServer(b, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "one", map[string]string{"cm.yaml": "a: 1\n"})
	must(b, env.Client.Create(ctx, &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("fleet"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}, Interval: &metav1.Duration{Duration: time.Hour}}}))
	for _, name := range []string{"east", "west"} {
		c := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: name}}}}
		must(b, env.Client.Create(ctx, c))
	}
	var elements []apiextensionsv1.JSON
	for i := range 50 {
		elements = append(elements, apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"app":"a%02d","wave":"w%d"}`, i, i%4)})
	}
	strategy := &gitsyncv1.ApplicationSetStrategy{Type: gitsyncv1.RollingSyncStrategy}
	for w := range 4 {
		strategy.Steps = append(strategy.Steps, gitsyncv1.RollingSyncStep{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"wave": fmt.Sprintf("w%d", w)}}})
	}
	set := &gitsyncv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{Matrix: &gitsyncv1.MatrixGenerator{Generators: []gitsyncv1.ApplicationSetBaseGenerator{
				{List: &gitsyncv1.ListGenerator{Elements: elements}}, {Clusters: &gitsyncv1.ClustersGenerator{}}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .app }}-{{ .name }}", Labels: map[string]string{"wave": "{{ .wave }}"}},
				Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Cluster: &gitsyncv1.ClusterReference{Name: "{{ .name }}"}},
			},
			Strategy: strategy,
		}}
	waitRepo(b, ns, "")
	first := revision(b, ns)
	before := counter.Snapshot()
	start := time.Now()
	must(b, env.Client.Create(ctx, set))
	waitRollout(b, ns, first, 100)
	created := time.Since(start)
	createCounts := counter.Since(before)

	repo.Commit("main", "two", map[string]string{"cm.yaml": "a: 2\n"})
	before = counter.Snapshot()
	start = time.Now()
	r := &gitsyncv1.GitRepository{}
	must(b, env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "repo"}, r))
	patch := client.MergeFrom(r.DeepCopy())
	r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "two"}
	must(b, env.Client.Patch(ctx, r, patch))
	waitRepo(b, ns, first)
	waitRollout(b, ns, revision(b, ns), 100)
	rolled := time.Since(start)
	rolloutCounts := counter.Since(before)

	before = counter.Snapshot()
	time.Sleep(5 * time.Second)
	idle := counter.Since(before)

	b.ReportMetric(created.Seconds(), "create-100-s")
	b.ReportMetric(float64(apicount.Total(createCounts)), "create-requests")
	b.ReportMetric(rolled.Seconds(), "rollout-4-steps-s")
	b.ReportMetric(float64(apicount.Total(rolloutCounts)), "rollout-requests")
	b.ReportMetric(float64(apicount.Total(idle)), "idle-requests-5s")
	b.Logf("in-process; create: %s in %s; rollout: %s in %s; idle 5s: %s", apicount.Format(createCounts), created,
		apicount.Format(rolloutCounts), rolled, apicount.Format(idle))
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func revision(b *testing.B, ns string) string {
	r := &gitsyncv1.GitRepository{}
	must(b, env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "repo"}, r))
	return r.Status.Artifact.Revision
}

// waitRepo waits for the GitRepository's artifact to be other than not.
func waitRepo(b *testing.B, ns, not string) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r := &gitsyncv1.GitRepository{}
		must(b, env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "repo"}, r))
		if r.Status.Artifact != nil && r.Status.Artifact.Revision != not {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the GitRepository did not fetch")
}

// waitRollout waits until the set generated n Applications and its rollout of rev completed.
func waitRollout(b *testing.B, ns, rev string, n int) {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		s := &gitsyncv1.ApplicationSet{}
		must(b, env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "fleet"}, s))
		if r := s.Status.Rollout; r != nil && r.Revision == rev && int(r.CurrentStep) == len(r.Steps) && len(s.Status.Applications) == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the rollout did not complete")
}
