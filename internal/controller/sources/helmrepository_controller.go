package sources

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// HelmRepositoryReconciler polls Helm chart repositories (index.yaml with a conditional
// GET, or an OCI registry's tag lists) and records the index in status.
type HelmRepositoryReconciler struct {
	client.Client
	// APIReader reads Secrets uncached, so that their data is never held in the cache.
	APIReader client.Reader
	Charts    *chartrepo.Store
	Recorder  recorder.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Jitter returns the extra delay added to an interval; none when nil.
	Jitter func(time.Duration) time.Duration
	// Caps bound spec.interval (gitsync run --min-interval).
	Caps limits.Caps
	// Shard is the part of the HelmRepositories this replica polls (gitsync run --shard);
	// the zero Shard is all of them.
	Shard shard.Shard
	// SecretAccess, in tenant mode, checks that the namespace's tenant account may get
	// spec.secretRef before the operator reads it; nil checks nothing.
	SecretAccess *SecretAccess
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=helmrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=helmrepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=helmrepositories/finalizers,verbs=update

var helmRepositoryOwnedConditions = []string{
	gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition,
}

// Reconcile polls the repository and records its index. Status is written once, by the
// deferred patch (and before the first poll, to show progress).
func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	obj := &gitsyncv1.HelmRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(obj) { // its gitsync.dev/shard label moved it to another replica
		return ctrl.Result{}, nil
	}
	if obj.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, skipping")
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(obj, r.Client)
	defer func() {
		obj.Status.LastHandledReconcileAt = kit.RequestHandled(obj, obj.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, obj, helmRepositoryOwnedConditions, true))
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.HelmRepositoryKind).Observe(r.now().Sub(start).Seconds())
	}()
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "fetching %s", redact.URL(obj.Spec.URL))
	if obj.Status.Artifact == nil || obj.Generation != obj.Status.ObservedGeneration {
		patcher.PatchSoon(ctx, obj)
	}
	return r.reconcileIndex(ctx, obj)
}

// reconcileIndex reads the credentials and polls: index.yaml (nothing downloaded when
// the server says it did not change), or for oci:// the tags of every chart that an
// Application of this repository names. Sets Ready (True, or False with the reason),
// Stalled for what only a spec change can fix, and removes Reconciling. A failed poll
// keeps the last index.
func (r *HelmRepositoryReconciler) reconcileIndex(ctx context.Context, obj *gitsyncv1.HelmRepository) (ctrl.Result, error) {
	if err := r.SecretAccess.CheckHelmRepository(ctx, obj); err != nil {
		return r.fail(obj, gitsyncv1.AccessDeniedReason, err, false) // a new RoleBinding may allow it: retried
	}
	src, err := sourceid.HelmSource(ctx, r.APIReader, obj)
	if err != nil {
		return r.fail(obj, gitsyncv1.SecretNotFoundReason, err, false)
	}
	previous := ""
	if obj.Status.Artifact != nil && r.Charts.HasIndex(obj.Status.Artifact.Digest) {
		previous = obj.Status.Artifact.Digest
	}
	var charts []string // the tags an oci:// poll lists
	if chartrepo.IsOCI(obj.Spec.URL) {
		if charts, err = r.chartsOf(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	poll, err := r.Charts.Poll(ctx, src, previous, charts)
	if err != nil {
		switch {
		case chartrepo.IsUnauthorized(err):
			return r.fail(obj, gitsyncv1.AuthenticationFailedReason, err, false)
		case errors.Is(err, chartrepo.ErrIndexInvalid):
			// The server may publish a good index later: looked at again at the interval.
			sourceFailed(r.Recorder, obj, gitsyncv1.IndexInvalidReason, err)
			conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
			return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, r.interval(obj))}, nil
		case errors.Is(err, chartrepo.ErrTooLarge):
			return r.fail(obj, gitsyncv1.TooLargeReason, err, true)
		default:
			return r.fail(obj, gitsyncv1.FetchFailedReason, err, false)
		}
	}
	if obj.Status.Artifact == nil || obj.Status.Artifact.Digest != poll.Digest {
		obj.Status.Artifact = &gitsyncv1.Artifact{Revision: poll.Digest, Digest: poll.Digest, LastUpdateTime: metav1.NewTime(r.now())}
		ctrl.LoggerFrom(ctx).Info("new index", "digest", poll.Digest, "bytes", poll.Bytes)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, "NewArtifact", "Fetch",
			"stored index %s of %s", poll.Digest, redact.URL(obj.Spec.URL))
	}
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	conditions.Delete(obj, gitsyncv1.StalledCondition)
	conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "stored index %s", poll.Digest)
	return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, r.interval(obj))}, nil
}

// chartsOf lists the charts that the Applications of this repository name.
func (r *HelmRepositoryReconciler) chartsOf(ctx context.Context, obj *gitsyncv1.HelmRepository) ([]string, error) {
	apps := &gitsyncv1.ApplicationList{}
	if err := r.List(ctx, apps, client.MatchingFields{kit.ApplicationSourceIndex: kit.HelmSourceIndexKey(client.ObjectKeyFromObject(obj))}); err != nil {
		return nil, fmt.Errorf("listing the Applications of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	seen := map[string]bool{}
	var charts []string
	for i := range apps.Items {
		for j, src := range apps.Items[i].SourceList() {
			view := apps.Items[i].ForSource(j)
			if src.SourceRef.Kind != gitsyncv1.HelmRepositoryKind || sourceid.Key(view) != client.ObjectKeyFromObject(obj) {
				continue // another source of an Application of spec.sources
			}
			if h := src.Helm; h != nil && h.Chart != "" && !seen[h.Chart] {
				seen[h.Chart] = true
				charts = append(charts, h.Chart)
			}
		}
	}
	sort.Strings(charts)
	return charts, nil
}

// fail records a failed poll like the GitRepository's: Ready=False (the index is kept),
// a Warning event when new, and Stalled plus a terminal error when retrying cannot help.
func (r *HelmRepositoryReconciler) fail(obj *gitsyncv1.HelmRepository, reason string, err error, terminal bool) (ctrl.Result, error) {
	return failSource(r.Recorder, obj, reason, err, terminal)
}

func (r *HelmRepositoryReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// IndexesInUse are the digests of the indexes that HelmRepositories point at (chart GC).
func IndexesInUse(ctx context.Context, c client.Client) (map[string]bool, error) {
	repos := &gitsyncv1.HelmRepositoryList{}
	if err := c.List(ctx, repos); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, repo := range repos.Items {
		if repo.Status.Artifact != nil {
			keep[repo.Status.Artifact.Digest] = true
		}
	}
	return keep, nil
}

// interval is spec.interval within the operator's caps (a Warning when it is raised, on
// a new generation).
func (r *HelmRepositoryReconciler) interval(obj *gitsyncv1.HelmRepository) time.Duration {
	d, note := r.Caps.Interval("spec.interval", obj.GetInterval().Duration)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, note)
	return d
}
