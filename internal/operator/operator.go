// Package operator wires gitsync's controllers into one controller-runtime manager; both
// `gitsync run` and `gitsync demo` start it.
package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gitsync-dev/gitsync/internal/attest"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/application"
	"github.com/gitsync-dev/gitsync/internal/controller/applicationset"
	clustercontroller "github.com/gitsync-dev/gitsync/internal/controller/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/image"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/controller/notification"
	selfheal "github.com/gitsync-dev/gitsync/internal/controller/selfheal"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
	"github.com/gitsync-dev/gitsync/internal/monitoring"
	"github.com/gitsync-dev/gitsync/internal/notify"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/preview"
	gitsyncscheme "github.com/gitsync-dev/gitsync/internal/scheme"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/ui"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// New builds the manager with every controller registered.
func New(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (manager.Manager, error) {
	if scheme == nil {
		scheme = gitsyncscheme.New()
	}
	if opts.StoragePath == "" {
		opts.StoragePath = DefaultStoragePath()
	}
	if opts.Concurrent <= 0 {
		opts.Concurrent = 4
	}
	if opts.GCInterval <= 0 {
		opts.GCInterval = 10 * time.Minute
	}
	cfg = withRateLimit(cfg, opts.KubeAPIQPS, opts.KubeAPIBurst)
	// What fails while the API server is away (watches, reconciles) is retried as soon as
	// it answers again.
	apiServer, err := kit.NewAPIServer(cfg)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(apiServer.Wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 opts.Metrics.ServerOptions(opts.MetricsBindAddress),
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID(opts.Shard),
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           durationOrNil(opts.LeaseDuration),
		RenewDeadline:           durationOrNil(opts.RenewDeadline),
		RetryPeriod:             durationOrNil(opts.RetryPeriod),
		// Secret data is read uncached, when a repository needs it: the cache keeps only
		// the metadata of Secrets.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Secrets and ConfigMaps are watched as metadata only, to re-sync the Applications
		// whose render reads one: their managedFields (most of their metadata) are not kept.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			metadataOf("ConfigMap"): {Transform: cache.TransformStripManagedFields()},
			metadataOf("Secret"):    {Transform: cache.TransformStripManagedFields()},
			// gitsync's own kinds: no reader of the cache looks at their managedFields
			// (status is written by merge patches computed from the cached copy).
			&gitsyncv1.Application{}:    {Transform: cache.TransformStripManagedFields()},
			&gitsyncv1.GitRepository{}:  {Transform: cache.TransformStripManagedFields()},
			&gitsyncv1.HelmRepository{}: {Transform: cache.TransformStripManagedFields()},
		}},
		Controller: config.Controller{SkipNameValidation: &opts.SkipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}

	helm.SetLimits(opts.RenderLimits)
	guard := opts.EgressGuard()
	fetcher, err := source.NewFetcherWithOptions(opts.StoragePath, source.FetcherOptions{Egress: guard, RefuseFileURLs: !opts.AllowFileURLs})
	if err != nil {
		return nil, fmt.Errorf("preparing the storage path: %w", err)
	}
	// Every event of the reconcilers is also routed to the matching Alerts (notifications).
	secretAccess := sources.NewSecretAccess(mgr.GetClient(), opts.DefaultServiceAccount, opts.CheckSecretAccess)
	events, _, err := notification.SetupWithQueue(mgr, notify.Options{Egress: guard, SecretAccess: secretAccess}, opts.Shard, opts.SharedQueue)
	if err != nil {
		return nil, err
	}
	// gitsync_resource_ready, read from the cache while the manager runs.
	if err := mgr.Add(monitoring.Default.Runnable(mgr.GetClient())); err != nil {
		return nil, err
	}
	repos := &sources.GitRepositoryReconciler{
		Client:       mgr.GetClient(),
		Fetcher:      fetcher,
		Jitter:       kit.Jitter(0.1),
		Shard:        opts.Shard,
		Caps:         opts.Caps,
		SecretAccess: secretAccess,
	}
	repos.Recorder = events
	if err := repos.SetupWithManager(mgr, sources.GitRepositoryOptions{MaxConcurrentReconciles: opts.Concurrent, APIServer: apiServer,
		SharedQueue: opts.SharedQueue}); err != nil {
		return nil, fmt.Errorf("setting up the GitRepository controller: %w", err)
	}
	// One applier (and one set of apply clients) for the sync and the drift controllers.
	applyFor, err := impersonate.NewWith(mgr.GetConfig(), mgr, impersonate.Options{DefaultServiceAccount: opts.DefaultServiceAccount})
	if err != nil {
		return nil, err
	}
	store := desired.New()
	drift := selfheal.New(store)
	drift.Client = mgr.GetClient()
	drift.Recorder = events
	drift.Applier = applyFor
	drift.Shard = opts.Shard
	if err := drift.SetupWithOptions(mgr, kit.Options{MaxConcurrentReconciles: opts.Concurrent, SharedQueue: opts.SharedQueue}); err != nil {
		return nil, fmt.Errorf("setting up the drift controller: %w", err)
	}
	charts, err := chartrepo.NewWithOptions(filepath.Join(opts.StoragePath, "helm"), chartrepo.Options{Egress: guard, MaxTimeout: opts.Caps.MaxTimeout})
	if err != nil {
		return nil, err
	}
	// One cache of remote clients for the Cluster and Application controllers.
	clusters := &cluster.Clients{Reader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Egress: guard}
	if secretAccess != nil { // tenant mode: a Cluster's kubeconfig Secret is checked as a source's
		clusters.SecretAccess = secretAccess
	}
	probes := &clustercontroller.Reconciler{Client: mgr.GetClient(), Clients: clusters, Recorder: events}
	if err := probes.SetupWithManager(mgr, kit.Options{MaxConcurrentReconciles: opts.Concurrent, SharedQueue: opts.SharedQueue}); err != nil {
		return nil, fmt.Errorf("setting up the Cluster controller: %w", err)
	}
	artifacts, err := oci.New(opts.StoragePath, oci.Options{Egress: guard})
	if err != nil {
		return nil, err
	}
	apps := &application.Reconciler{
		Clusters: clusters,
		Client:   mgr.GetClient(),
		Storage:  fetcher,
		Charts:   charts,
		Desired:  store,
		Applier:  applyFor,
		Jitter:   kit.Jitter(0.1),
		Caps:     opts.Caps,

		DefaultServiceAccount:   opts.DefaultServiceAccount,
		AllowCrossNamespaceRefs: opts.AllowCrossNamespaceRefs,
		Shard:                   opts.Shard,
		SecretAccess:            secretAccess,
	}
	if opts.AttestationKeySecret.Name != "" {
		apps.Attestations = &attest.KeySecret{Reader: mgr.GetAPIReader(), Secret: opts.AttestationKeySecret}
	}
	apps.Artifacts = artifacts
	if apps.Renderer, err = renderWorkers(mgr, opts.RenderWorkers); err != nil {
		return nil, err
	}
	apps.Recorder = events
	if err := apps.SetupWithManager(mgr, application.Options{MaxConcurrentReconciles: opts.Concurrent,
		MaxConcurrentPerNamespace: opts.MaxConcurrentPerNamespace, SharedQueue: opts.SharedQueue, APIServer: apiServer}); err != nil {
		return nil, fmt.Errorf("setting up the Application controller: %w", err)
	}
	sets := &applicationset.Reconciler{Client: mgr.GetClient(), Storage: fetcher, Recorder: events, Shard: opts.Shard}
	pulls := &applicationset.PullRequestLister{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Egress: guard}
	if secretAccess != nil {
		pulls.SecretAccess = secretAccess
	}
	sets.PullRequests = pulls.List
	if err := sets.SetupWithManager(mgr, applicationset.Options{MaxConcurrentReconciles: opts.Concurrent, SharedQueue: opts.SharedQueue,
		APIServer: apiServer}); err != nil {
		return nil, fmt.Errorf("setting up the ApplicationSet controller: %w", err)
	}
	helmRepos := &sources.HelmRepositoryReconciler{Client: mgr.GetClient(), Charts: charts, Jitter: kit.Jitter(0.1), Shard: opts.Shard, Caps: opts.Caps,
		SecretAccess: secretAccess}
	helmRepos.Recorder = events
	if err := helmRepos.SetupWithManager(mgr, sources.HelmRepositoryOptions{MaxConcurrentReconciles: opts.Concurrent, APIServer: apiServer,
		SharedQueue: opts.SharedQueue}); err != nil {
		return nil, fmt.Errorf("setting up the HelmRepository controller: %w", err)
	}
	if err := image.Setup(mgr, image.Options{Options: kit.Options{MaxConcurrentReconciles: opts.Concurrent, APIServer: apiServer,
		SharedQueue: opts.SharedQueue}, StoragePath: opts.StoragePath, Egress: guard, Caps: opts.Caps, Recorder: events,
		AllowCrossNamespaceRefs: opts.AllowCrossNamespaceRefs, AllowFileURLs: opts.AllowFileURLs, Shard: opts.Shard,
		SecretAccess: secretAccess}); err != nil {
		return nil, err
	}
	ociRepos := &sources.OCIRepositoryReconciler{Client: mgr.GetClient(), Puller: artifacts, Jitter: kit.Jitter(0.1), Shard: opts.Shard, Caps: opts.Caps,
		SecretAccess: secretAccess}
	ociRepos.Recorder = events
	if err := ociRepos.SetupWithManager(mgr, sources.OCIRepositoryOptions{MaxConcurrentReconciles: opts.Concurrent, APIServer: apiServer,
		SharedQueue: opts.SharedQueue}); err != nil {
		return nil, fmt.Errorf("setting up the OCIRepository controller: %w", err)
	}
	if opts.WebhookBindAddress != "" && opts.WebhookBindAddress != "0" {
		// Pull-request previews: fetched as the sync fetches, rendered by its workers,
		// dry-run as each Application's identity.
		previews, err := newPreviews(mgr, &preview.Runner{ApplyFor: applyFor, Render: apps.Renderer, Egress: guard,
			Fetch: source.FetcherOptions{Egress: guard, RefuseFileURLs: !opts.AllowFileURLs}, SecretAccess: previewSecrets(secretAccess)})
		if err != nil {
			return nil, err
		}
		receiver := webhook.NewHandler(&sources.WebhookCluster{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			SecretMetadata: mgr.GetCache()},
			webhook.Options{SharedSecret: opts.WebhookSecret, Previewer: previews})
		if err := mgr.Add(webhookServer(opts.WebhookBindAddress, receiver)); err != nil {
			return nil, err
		}
	}
	if err := mgr.Add(checkoutGC(mgr.GetClient(), fetcher, opts.GCInterval)); err != nil {
		return nil, err
	}
	if err := mgr.Add(chartGC(mgr.GetClient(), charts, opts.GCInterval)); err != nil {
		return nil, err
	}
	if err := mgr.Add(ociGC(mgr.GetClient(), artifacts, opts.GCInterval)); err != nil {
		return nil, err
	}
	if err := addUI(mgr, cfg, mgr.GetScheme(), opts, ui.DesiredDiffer(store.Objects)); err != nil {
		return nil, err
	}
	return mgr, nil
}

// LeaderElectionID names the Lease of the replicas of a shard: gitsync-leader.gitsync.dev
// without sharding, gitsync-leader-shard-N-of-M.gitsync.dev with it.
func LeaderElectionID(s shard.Shard) string {
	if !s.Enabled() {
		return "gitsync-leader.gitsync.dev"
	}
	return fmt.Sprintf("gitsync-leader-shard-%d-of-%d.gitsync.dev", s.Index, s.Count)
}

// metadataOf is the metadata-only cache key of a core kind.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
}

func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// checkoutGC removes, at every interval, the checkouts that no GitRepository's artifact
// points at any more. It runs on the leader only, like the controllers.
func checkoutGC(c client.Client, fetcher *source.Fetcher, interval time.Duration) manager.Runnable {
	return gc("checkout-gc", interval, func(ctx context.Context) (int, error) {
		keep, err := sources.CheckoutsInUse(ctx, c)
		if err != nil {
			return 0, fmt.Errorf("listing checkouts in use: %w", err)
		}
		return fetcher.GC(keep)
	})
}

// chartGC removes, at every interval, the indexes that no HelmRepository's artifact
// points at, and chart archives unused for a day. It runs on the leader only.
func chartGC(c client.Client, charts *chartrepo.Store, interval time.Duration) manager.Runnable {
	return gc("chart-gc", interval, func(ctx context.Context) (int, error) {
		keep, err := sources.IndexesInUse(ctx, c)
		if err != nil {
			return 0, fmt.Errorf("listing indexes in use: %w", err)
		}
		return charts.GC(keep, 24*time.Hour)
	})
}

// ociGC removes, at every interval, the OCI artifacts that no OCIRepository points at and
// no Application last applied, once they are ten minutes old. It runs on the leader only.
func ociGC(c client.Client, artifacts *oci.Client, interval time.Duration) manager.Runnable {
	return gc("oci-gc", interval, func(ctx context.Context) (int, error) {
		keep, err := sources.OCIArtifactsInUse(ctx, c, artifacts)
		if err != nil {
			return 0, fmt.Errorf("listing OCI artifacts in use: %w", err)
		}
		return artifacts.GC(keep, 10*time.Minute)
	})
}

// gc runs collect at every interval and logs what it removed.
func gc(name string, interval time.Duration, collect func(context.Context) (int, error)) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName(name)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			removed, err := collect(ctx)
			if err != nil {
				log.Error(err, "collecting garbage")
			}
			if removed > 0 {
				log.Info("removed unused files", "count", removed)
			}
		}, interval)
		return nil
	})
}

// webhookServer serves the receiver on every replica (a wake-up is an annotation any
// replica may set), until the manager stops.
func webhookServer(addr string, h http.Handler) manager.Runnable {
	return &server{addr: addr, handler: h}
}

type server struct {
	addr    string
	handler http.Handler
}

func (s *server) NeedLeaderElection() bool { return false }

func (s *server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("webhook receiver: %w", err)
	}
	srv := webhook.NewServer(s.handler)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ctrl.LoggerFrom(ctx).Info("serving push webhooks", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}
