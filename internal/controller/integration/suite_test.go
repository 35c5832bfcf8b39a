package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gitsync-dev/gitsync/internal/controller/application"
	"github.com/gitsync-dev/gitsync/internal/controller/applicationset"
	clustercontroller "github.com/gitsync-dev/gitsync/internal/controller/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/notification"
	selfheal "github.com/gitsync-dev/gitsync/internal/controller/selfheal"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var (
	env             *testenv.Env
	storagePath     string
	driftReconciler *selfheal.Reconciler
	ociArtifacts    *oci.Client
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

// runSuite starts one API server and one manager with the controllers for the package.
func runSuite(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.Level(zapLevel()))))
	var err error
	storagePath, err = os.MkdirTemp("", "gitsync-storage-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(storagePath)

	return testenv.Run(m, &env, func() (func(), error) {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
			Scheme:  env.Scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
			Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		})
		if err != nil {
			return nil, err
		}
		fetcher, err := source.NewFetcher(storagePath)
		if err != nil {
			return nil, err
		}
		events, dispatcher, err := notification.Setup(mgr, notificationTestOptions, shard.Shard{})
		if err != nil {
			return nil, err
		}
		notifier, notifyingRecorder = dispatcher, events
		repos := &sources.GitRepositoryReconciler{Client: mgr.GetClient(), Fetcher: fetcher}
		repos.Recorder = events
		if err := repos.SetupWithManager(mgr, sources.GitRepositoryOptions{
			MaxConcurrentReconciles: 4,
			RetryBase:               100 * time.Millisecond,
			RetryMax:                time.Second,
		}); err != nil {
			return nil, err
		}
		drift := selfheal.New(desired.New())
		drift.Client = mgr.GetClient()
		drift.Recorder = events
		drift.Now = clock.Now // application_syncwindow_selfheal_test.go
		if err := drift.SetupWithManager(mgr, 4); err != nil {
			return nil, err
		}
		driftReconciler = drift
		charts, err := chartrepo.New(filepath.Join(storagePath, "helm"))
		if err != nil {
			return nil, err
		}
		artifacts, err := oci.New(storagePath, oci.Options{})
		if err != nil {
			return nil, err
		}
		apps := &application.Reconciler{Client: mgr.GetClient(), Storage: fetcher, Charts: charts, Desired: drift.Desired, RetryInterval: 300 * time.Millisecond,
			Now: clock.Now}
		apps.Artifacts, ociArtifacts = artifacts, artifacts
		apps.Recorder = events
		apps.Attestations = attestedInTests{} // attest_keys_test.go
		if err := apps.SetupWithManager(mgr, application.Options{
			MaxConcurrentReconciles: 4, MaxConcurrentPerNamespace: 2, // tenancy_waits_test.go
			RetryBase: 100 * time.Millisecond,
			RetryMax:  time.Second,
		}); err != nil {
			return nil, err
		}
		sets := &applicationset.Reconciler{Client: mgr.GetClient(), Storage: fetcher, Recorder: events}
		sets.PullRequests = (&applicationset.PullRequestLister{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader()}).List
		if err := sets.SetupWithManager(mgr, applicationset.Options{MaxConcurrentReconciles: 2,
			RetryBase: 100 * time.Millisecond, RetryMax: time.Second}); err != nil {
			return nil, err
		}
		probes := &clustercontroller.Reconciler{Client: mgr.GetClient(), Clients: apps.Clusters, Recorder: events,
			RetryBase: 200 * time.Millisecond, RetryMax: time.Second, Interval: 2 * time.Second}
		if err := probes.SetupWithManager(mgr, application.Options{MaxConcurrentReconciles: 2}); err != nil {
			return nil, err
		}
		helmRepos := &sources.HelmRepositoryReconciler{Client: mgr.GetClient(), Charts: charts}
		helmRepos.Recorder = events
		if err := helmRepos.SetupWithManager(mgr, sources.HelmRepositoryOptions{
			MaxConcurrentReconciles: 4,
			RetryBase:               100 * time.Millisecond,
			RetryMax:                time.Second,
		}); err != nil {
			return nil, err
		}
		ociRepos := &sources.OCIRepositoryReconciler{Client: mgr.GetClient(), Puller: artifacts, Caps: limits.Caps{MaxArtifactSize: ociMaxArtifactSize}}
		ociRepos.Recorder = events
		if err := ociRepos.SetupWithManager(mgr, sources.OCIRepositoryOptions{
			MaxConcurrentReconciles: 4,
			RetryBase:               100 * time.Millisecond,
			RetryMax:                time.Second,
		}); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		}()
		return func() { cancel(); <-done }, nil
	})
}

func zapLevel() int8 {
	if os.Getenv("GITSYNC_TEST_VERBOSE") != "" {
		return -1
	}
	return 4 // nothing (failures in tests are expected; GITSYNC_TEST_VERBOSE=1 shows all)
}

const (
	pollInterval = 100 * time.Millisecond
	waitTimeout  = 30 * time.Second
)

// getRepo reads a GitRepository through the uncached client.
func getRepo(g Gomega, ns, name string) *gitsyncv1.GitRepository {
	obj := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// editRepo changes a GitRepository with a merge patch (no conflict with the controller's writes).
func editRepo(g Gomega, ns, name string, change func(*gitsyncv1.GitRepository)) {
	obj := getRepo(g, ns, name)
	base := client.MergeFrom(obj.DeepCopy())
	change(obj)
	g.Expect(env.Client.Patch(context.Background(), obj, base)).To(Succeed())
}

func readyCondition(obj *gitsyncv1.GitRepository) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.Status.Conditions, gitsyncv1.ReadyCondition)
}

// eventsFor lists the events whose regarding object is the named one.
func eventsFor(g Gomega, ns, name string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}
