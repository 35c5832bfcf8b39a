// Package application reconciles Applications: a sync is a list of named steps (locate
// and render through internal/render, plan, dry-run, apply in order with hooks, prune,
// health, status); it records what it applied in internal/desired.
package application

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Checkouts locates the stored checkout of a commit (internal/source's Fetcher).
type Checkouts interface {
	CheckoutDir(key, commit string, ignore []string) string
	// Acquire keeps a checkout from GC until release is called.
	Acquire(dir string) (release func())
}

// Reconciler builds an Application's path from its source's artifact, applies
// it, prunes what left Git and reports sync and health.
type Reconciler struct {
	client.Client
	// APIReader reads sources and dependencies uncached where freshness matters.
	APIReader client.Reader
	// Applier makes the apply.Manager of an Application: it goes through an uncached
	// client, impersonating spec.serviceAccountName when set.
	Applier func(app *gitsyncv1.Application) (*apply.Manager, error)
	Mapper  meta.RESTMapper
	Storage Checkouts
	// Charts holds the indexes and chart archives of HelmRepository sources.
	Charts *chartrepo.Store
	// Artifacts locates the unpacked artifacts of OCIRepository sources (an oci.Client).
	Artifacts sourceid.OCIArtifacts
	Recorder  recorder.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Jitter returns the extra delay added to an interval; none when nil.
	Jitter func(time.Duration) time.Duration
	// Desired, when set, records what was applied for the drift controller, which
	// watches it and corrects drift between syncs; with it, a quiet interval resync makes
	// no API request (see reconcileBackstop).
	Desired *desired.Store
	// Discovery reads the cluster's capabilities for Helm charts; Config makes the
	// clients of Helm's lookup (impersonating the Application's identity). SetupWithManager
	// sets both from the manager.
	Discovery discovery.DiscoveryInterface
	Config    *rest.Config
	lookups   render.LookupClients
	// RetryInterval is how often an Application waiting for its source's artifact or for
	// its dependencies looks again (5s when zero). The watches usually come first; this
	// covers an event that reached the cache before the Application did.
	RetryInterval time.Duration
	// DefaultServiceAccount is what Applier impersonates for an Application without
	// spec.serviceAccountName (gitsync run --default-service-account); it is recorded in
	// status.serviceAccount. Set both, or leave Applier nil to have it made from this.
	DefaultServiceAccount string
	// AllowCrossNamespaceRefs lets sourceRef and dependsOn name another namespace
	// (gitsync run --allow-cross-namespace-refs); refused with AccessDenied otherwise.
	AllowCrossNamespaceRefs bool
	// Shard is the part of the Applications this replica reconciles (gitsync run
	// --shard); the zero Shard is all of them. A source of another shard is fetched
	// here at its artifact's commit.
	Shard shard.Shard
	// Caps bound spec.timeout and spec.interval (gitsync run --max-timeout,
	// --min-interval); a spec over them gets the cap, and a Warning at each apply.
	Caps limits.Caps
	// SecretAccess, in tenant mode, checks that the namespace's tenant account may get a
	// HelmRepository's spec.secretRef before a chart download reads it (nil: no check).
	SecretAccess interface {
		CheckHelmRepository(context.Context, *gitsyncv1.HelmRepository) error
	}
	// Renderer renders an Application as render.Render does; the operator sets its
	// render worker pool (renders bounded in child processes). nil renders in process.
	Renderer func(context.Context, *gitsyncv1.Application, render.Source, *render.Cluster) (*render.Result, error)
	// Attestations, when set, gives the key that signs an attestation of each successful
	// sync (gitsync run --attestation-key-secret: *attest.KeySecret; attest_step.go).
	Attestations AttestationKeys
	// Clusters reaches the Clusters that Applications name in spec.cluster (the operator
	// shares it with the Cluster controller); SetupWithManager makes one when nil.
	Clusters *cluster.Clients
	// localApply is the Applier of this cluster (Applier itself sends an Application
	// with spec.cluster to its Cluster: see setupClusters).
	localApply func(*gitsyncv1.Application) (*apply.Manager, error)
	// remote watches the objects of Applications on other clusters (cluster_drift.go).
	remote *remoteDrift
	// WaitInWorker is how long an ordered sync waits for a hook or a wave in its
	// worker before it yields and looks again later (2s when zero; see resume.go).
	WaitInWorker time.Duration

	// refreshes remembers, per Application, the missing checkout it asked its source to
	// fetch again, so that it asks once per revision and then backs off.
	refreshMu sync.Mutex
	refreshes map[types.NamespacedName]refreshAsked
	// written holds the version of each Application's last status write.
	written kit.WrittenVersions
	// refsChanged holds the Applications whose Secrets or ConfigMaps changed.
	refsChanged changedRefs
	// heldPrunes holds the Applications whose last prune a sibling held back: their
	// next resync is a full sync that tries again (prune_step.go).
	heldPrunes changedRefs
	// held keeps the drift locks of the syncs that yielded until they end.
	held heldLocks
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=applications,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applications/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=applications/finalizers,verbs=update
// +kubebuilder:rbac:groups=*,resources=*,verbs=*
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate

var applicationOwnedConditions = []string{
	gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition, gitsyncv1.HealthyCondition,
}

// Reconcile runs the steps of a sync; status is written by the deferred patch (and once
// before the apply, to show progress).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	// The drift lock a sync of this Application kept when it yielded: its next
	// reconcile takes it over, and releases it unless the sync yields again.
	lock := r.held.take(req.NamespacedName)
	defer r.held.release(req.NamespacedName, lock)
	app := &gitsyncv1.Application{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
			r.forgetRemote(req.NamespacedName) // cluster_drift.go
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.Stale(req.NamespacedName, app.ResourceVersion) {
		// The cache has not seen the status this reconciler wrote last (see kit.WrittenVersions).
		if err := r.APIReader.Get(ctx, req.NamespacedName, app); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if !r.Shard.Owns(app) { // its gitsync.dev/shard label moved it to another replica
		if r.Desired != nil {
			r.Desired.Forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}

	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, app)
	}
	if !controllerutil.ContainsFinalizer(app, gitsyncv1.Finalizer) {
		patchBase := client.MergeFrom(app.DeepCopy())
		controllerutil.AddFinalizer(app, gitsyncv1.Finalizer)
		if err := r.Patch(ctx, app, patchBase); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if app.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, skipping")
		r.forgetRemote(req.NamespacedName) // cluster_drift.go
		if r.Desired != nil {
			r.Desired.Forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}

	patcher := kit.NewStatusPatcher(app, r.Client)
	s := &syncRun{app: app, started: metav1.NewTime(start), previous: inventoryEntries(app), log: ctrl.LoggerFrom(ctx),
		inProgress: inProgress{lock: lock}}
	s.saveProgress = func(ctx context.Context) { patcher.PatchSoon(ctx, app) }
	defer func() {
		// With autoSync off, a sync request stays pending until a sync ran (applied, or
		// failed at the apply): waiting for a dependency or a failed build does not use it up.
		if autoSync(app) || s.applyTried {
			app.Status.LastHandledReconcileAt = kit.RequestHandled(app, app.Status.LastHandledReconcileAt)
		}
		if s.restored && s.result == nil && r.Desired != nil {
			// Protected by the last applied revision only: check it all once now.
			r.Desired.CheckAll(req.NamespacedName)
		}
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, app, applicationOwnedConditions, true))
		r.written.Remember(req.NamespacedName, app.ResourceVersion)
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.ApplicationKind).Observe(r.now().Sub(start).Seconds())
	}()

	for _, step := range []func(context.Context, *syncRun) outcome{
		r.reconcileAccess,        // tenancy.go
		r.reconcileCluster,       // cluster_step.go: spec.cluster
		r.reconcileRestore,       // restore.go
		r.reconcileDependencies,  // dependencies_step.go
		r.reconcileSource,        // source_step.go (chart.go, pin.go)
		r.reconcileValuesSources, // sources.go
		r.reconcileWindow,        // window_step.go
		r.reconcileRemoteDrift,   // cluster_drift.go: spec.cluster
		r.reconcileBackstop,      // backstop_step.go
		r.reconcileBuild,         // build_step.go
		r.reconcileApply,         // apply_step.go
		r.reconcilePrune,         // prune_step.go
		r.reconcileHealth,        // health_step.go
		r.reconcileAttestation,   // attest_step.go
	} {
		if out := step(ctx, s); out.kind != stepDone {
			return s.finishOutcome(r, out)
		}
	}
	return s.finishOutcome(r, done())
}

// markProgress sets Reconciling, and Ready=Unknown with the same message (what the sync
// does now, instead of the last outcome), and writes them if the step takes long enough
// to be seen, when the run will change something visible: a new revision or a new spec.
// A routine resync writes nothing.
func (s *syncRun) markProgress(ctx context.Context, format string, args ...any) {
	app := s.app
	if s.revision == app.Status.LastAppliedRevision && app.Generation == app.Status.ObservedGeneration &&
		conditions.IsReady(app) {
		return
	}
	conditions.MarkReconciling(app, gitsyncv1.ProgressingReason, format, args...)
	conditions.MarkUnknown(app, gitsyncv1.ReadyCondition, gitsyncv1.ProgressingReason, format, args...)
	s.saveProgress(ctx)
}
