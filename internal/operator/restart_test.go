package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// startCounted runs an operator whose API requests are counted, until stop.
func startCounted(t *testing.T, storage string) (counter *apicount.Counter, stop func()) {
	t.Helper()
	counter = apicount.New()
	cfg := rest.CopyConfig(env.Config)
	counter.Wrap(cfg)
	mgr, err := New(cfg, env.Scheme, Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: storage, SkipNameValidation: true,
		DenyEgress: NoEgressGuard, // the Git server is on loopback
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return counter, stop
}

// fiveConfigMaps creates, in a new namespace, an Application of five ConfigMaps from a
// new repository, and waits until it is Ready. Call remove while an operator runs, so
// that the next test's operators do not reconcile it (against a storage that lacks its
// checkout).
func fiveConfigMaps(t *testing.T) (ns string, repo *gittest.Repo, remove func()) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("cm-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  value: \"%d\"\n", i, i)
	}
	srv := gittest.NewServer(t, gittest.Options{})
	repo = srv.CreateRepo("app")
	repo.Commit("main", "five", files)
	ns = env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Interval: &metav1.Duration{Duration: 10 * time.Minute}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app"},
			Interval: &metav1.Duration{Duration: 10 * time.Minute}},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	remove = func() {
		key := client.ObjectKey{Namespace: ns, Name: "app"}
		_ = env.Client.Delete(ctx, &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})
		_ = env.Client.Delete(ctx, &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, key, &gitsyncv1.Application{}))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
	}
	return ns, repo, remove
}

// configMapRequests are the counter's requests on ConfigMaps by verb, lists and
// watches (the drift watches' and the owner checks') aside.
func configMapRequests(counter *apicount.Counter) map[string]int {
	out := map[string]int{}
	for k, v := range counter.DetailSnapshot() {
		if verb, resource, _ := strings.Cut(k, " "); resource == "configmaps" && verb != "list" && verb != "watch" {
			out[verb] = v
		}
	}
	return out
}

// waitQuiet waits until counter saw no request for a second.
func waitQuiet(g Gomega, counter *apicount.Counter) {
	last := -1
	g.Eventually(func() bool {
		n := apicount.Total(counter.Snapshot())
		quiet := n == last
		last = n
		return quiet
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue())
}

// configMapValue reads data.value of a ConfigMap.
func configMapValue(g Gomega, ns, name string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm.Data["value"]
}

// A first sync of five new ConfigMaps costs one dry-run and one apply each: the owner
// check reads the drift watch's cache (no GET, no LIST: the watch streams its first
// list).
func TestFirstSyncSendsDryRunAndApplyOnly(t *testing.T) {
	g := NewWithT(t)
	counter, _ := startCounted(t, t.TempDir())
	_, _, remove := fiveConfigMaps(t)
	defer remove()
	waitQuiet(g, counter)
	detail := counter.DetailSnapshot()
	g.Expect(configMapRequests(counter)).To(Equal(map[string]int{"dry-run-patch": 5, "patch": 5}), "%v", detail)
	g.Expect(detail).NotTo(HaveKey("list configmaps"))
}

// A new revision that changes one of five objects sends only that one: the others are
// as the last sync left them (same render, untouched since) and are not even dry-run.
func TestNewRevisionSendsOnlyWhatChanged(t *testing.T) {
	g := NewWithT(t)
	counter, _ := startCounted(t, t.TempDir())
	ns, repo, remove := fiveConfigMaps(t)
	defer remove()
	before := configMapRequests(counter)
	repo.CommitFunc("main", "cm-2", func(dir string) {
		g.Expect(os.WriteFile(filepath.Join(dir, "cm-2.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-2\ndata:\n  value: changed\n"), 0o644)).To(Succeed())
	})
	gitRepo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, gitRepo)).To(Succeed())
	base := client.MergeFrom(gitRepo.DeepCopy())
	gitRepo.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "now"}
	g.Expect(env.Client.Patch(context.Background(), gitRepo, base)).To(Succeed())
	g.Eventually(func(g Gomega) string { return configMapValue(g, ns, "cm-2") }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal("changed"))
	time.Sleep(time.Second) // anything else the sync would send
	after := configMapRequests(counter)
	sent := map[string]int{}
	for verb, n := range after {
		if d := n - before[verb]; d > 0 {
			sent[verb] = d
		}
	}
	g.Expect(sent).To(Equal(map[string]int{"dry-run-patch": 1, "get": 1, "patch": 1}))
}

// A restart with nothing changed writes nothing and reads none of the applied objects:
// the drift watches' managedFields show them as gitsync left them. An object edited
// while no operator ran is the only one read again, and it is corrected.
func TestRestartReadsOnlyWhatChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	storage := t.TempDir()
	counter, stop := startCounted(t, storage)
	ns, _, remove := fiveConfigMaps(t)
	defer remove()
	waitQuiet(g, counter) // its last writes land before it stops
	stop()

	reconciled := apicount.Reconciles("application")
	counter, stop = startCounted(t, storage)
	g.Eventually(func() float64 { return apicount.Reconciles("application") - reconciled }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(BeNumerically(">=", 1))
	g.Consistently(func() map[string]int { return configMapRequests(counter) }).
		WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEmpty())
	g.Expect(apicount.Writes(counter.Snapshot())).To(BeZero(), apicount.Format(counter.DetailSnapshot()))
	stop()

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-2"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	counter, _ = startCounted(t, storage)
	g.Eventually(func(g Gomega) string { return configMapValue(g, ns, "cm-2") }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal("2"))
	// One correction; cm-2 is read and dry-run (and once more when the watch reports
	// the correction itself); the four untouched ConfigMaps are not.
	time.Sleep(time.Second)
	requests := configMapRequests(counter)
	g.Expect(requests["patch"]).To(Equal(1), "%v", requests)
	g.Expect(requests["get"]).To(BeNumerically("<=", 2), "%v", requests)
	g.Expect(requests["dry-run-patch"]).To(BeNumerically("<=", 2), "%v", requests)
}

// Issue 34 (found while testing SOPS): an operator restarted while an Application reads a
// ConfigMap (spec.postBuild.substituteFrom; spec.decryption and valuesFrom are the same
// path) starts its Application controller and applies the next revision. The watch of
// the kind it reads used to be started from inside the Application informer's handler,
// which deadlocked the controller's start until its cache-sync timeout ended the
// operator, at every restart.
func TestRestartWithAnApplicationThatReadsAConfigMap(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	storage := t.TempDir()
	ns := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns},
		Data: map[string]string{"GREETING": "hello"}})).To(Succeed())
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	cm := func(rev string) map[string]string {
		return map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  value: \"${GREETING} " + rev + "\"\n"}
	}
	repo.Commit("main", "first", cm("1"))
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Interval: &metav1.Duration{Duration: time.Second}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app"},
			PostBuild: &gitsyncv1.PostBuild{SubstituteFrom: []gitsyncv1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}}}},
	})).To(Succeed())
	defer func() {
		_ = env.Client.Delete(ctx, &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}})
	}()

	_, stop := startCounted(t, storage)
	g.Eventually(func(g Gomega) string { return configMapValue(g, ns, "greeting") }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal("hello 1"))
	stop()

	repo.Commit("main", "second", cm("2"))
	_, stop = startCounted(t, storage)
	defer stop()
	g.Eventually(func(g Gomega) string { return configMapValue(g, ns, "greeting") }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal("hello 2"))
}
