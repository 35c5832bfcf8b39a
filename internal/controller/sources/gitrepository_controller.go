// Package sources reconciles the sources: GitRepository (ls-remote, a fetch only when
// the commit moved) and HelmRepository (the index and the charts the Applications name),
// and answers the webhook receiver. Only this controller fetches.
package sources

import (
	"context"
	"errors"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Fetcher is what the GitRepository reconciler needs of internal/source.
type Fetcher interface {
	Fetch(ctx context.Context, req source.Request) (*source.Artifact, error)
}

// GitRepositoryReconciler polls Git repositories and records their artifacts in status.
type GitRepositoryReconciler struct {
	client.Client
	// APIReader reads Secrets uncached, so that their data is never held in the cache.
	APIReader client.Reader
	// SecretAccess, in tenant mode, checks that the namespace's tenant account may get
	// spec.secretRef before the operator reads it for the fetch (nil: no check).
	SecretAccess *SecretAccess
	Fetcher      Fetcher
	Recorder     recorder.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Jitter returns the extra delay added to an interval; none when nil.
	Jitter func(time.Duration) time.Duration
	// Shard is the part of the GitRepositories this replica fetches (gitsync run
	// --shard); the zero Shard is all of them.
	Shard shard.Shard
	// Caps bound spec.interval, spec.timeout and spec.maxSize (gitsync run --min-interval,
	// --max-timeout, --max-artifact-size); a spec over them gets the cap and a Warning.
	Caps limits.Caps
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=gitrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=gitrepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=gitrepositories/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile lists the remote's refs, fetches when the selected commit moved, and records
// the artifact. Status is written once, by the deferred patch.
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	start := r.now()

	obj := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(obj) { // its gitsync.dev/shard label moved it to another replica
		return ctrl.Result{}, nil
	}
	if obj.Spec.Suspend {
		log.V(1).Info("suspended, skipping")
		return ctrl.Result{}, nil
	}

	patcher := kit.NewStatusPatcher(obj, r.Client)
	defer func() {
		obj.Status.LastHandledReconcileAt = kit.RequestHandled(obj, obj.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, obj, gitRepositoryOwnedConditions, true))
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.GitRepositoryKind).Observe(r.now().Sub(start).Seconds())
	}()

	// Progress is shown during the remote calls (they can take up to spec.timeout) when a
	// fetch is likely, a new object or a new spec, and the fetch takes long enough to be
	// seen. A routine poll writes nothing unless its outcome changes status, so a quiet
	// repository costs no API writes.
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "fetching %s", redact.URL(obj.Spec.URL))
	if obj.Status.Artifact == nil || obj.Generation != obj.Status.ObservedGeneration {
		patcher.PatchSoon(ctx, obj)
	}

	return r.reconcileSource(ctx, obj)
}

var gitRepositoryOwnedConditions = []string{
	gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition,
}

// reconcileSource reads the credentials, fetches, and stores the artifact. It sets Ready
// (True/Succeeded, or False with the failure's reason), Stalled for failures that only a
// spec change or a change on the remote can fix, and removes Reconciling.
func (r *GitRepositoryReconciler) reconcileSource(ctx context.Context, obj *gitsyncv1.GitRepository) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	interval, n1 := r.Caps.Interval("spec.interval", obj.GetInterval().Duration)

	// A URL that could be read two ways (a fragment, a query, user info) is refused before
	// its Secret is read or anything is dialled.
	if err := source.CheckURL(obj.Spec.URL); err != nil {
		return r.fail(obj, gitsyncv1.URLInvalidReason, err, true)
	}
	if err := r.SecretAccess.CheckGitRepository(ctx, obj); err != nil {
		return r.fail(obj, gitsyncv1.AccessDeniedReason, err, false) // a new RoleBinding may allow it: retried
	}
	request, err := sourceid.GitRequest(ctx, r.APIReader, obj, refOf(obj))
	if err != nil {
		return r.fail(obj, gitsyncv1.SecretNotFoundReason, err, false)
	}
	keys, reason, err := r.gitVerifyKeys(ctx, obj)
	if err != nil {
		return r.fail(obj, reason, err, false)
	}
	request.Signatures = keys != nil
	var n2, n3 string
	request.MaxSize, n2 = r.Caps.ArtifactSize("spec.maxSize", maxSizeOf(obj))
	request.Timeout, n3 = r.Caps.Timeout("spec.timeout", request.Timeout)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, n1, n2, n3)
	request.Current = kit.CurrentArtifact(obj)
	artifact, err := r.Fetcher.Fetch(ctx, request)
	if err != nil {
		kit.FetchesTotal.WithLabelValues("failed").Inc()
		switch {
		case errors.Is(err, source.ErrAuthentication):
			return r.fail(obj, gitsyncv1.AuthenticationFailedReason, err, false)
		case errors.Is(err, source.ErrRefNotFound):
			// The ref may still be created on the remote: stalled, but looked at again
			// at the interval rather than with a fast backoff.
			r.failed(obj, gitsyncv1.RefNotFoundReason, err)
			conditions.MarkStalled(obj, gitsyncv1.RefNotFoundReason, "%s", err)
			return ctrl.Result{RequeueAfter: r.withJitter(interval)}, nil
		case errors.Is(err, source.ErrURLInvalid):
			return r.fail(obj, gitsyncv1.URLInvalidReason, err, true)
		case errors.Is(err, source.ErrRefInvalid):
			return r.fail(obj, gitsyncv1.RefInvalidReason, err, true)
		case errors.Is(err, source.ErrTooLarge):
			// Fetching again would transfer up to maxSize again for nothing.
			return r.fail(obj, gitsyncv1.TooLargeReason, err, true)
		default:
			return r.fail(obj, gitsyncv1.FetchFailedReason, err, false)
		}
	}
	if artifact.Fetched {
		kit.FetchesTotal.WithLabelValues("fetched").Inc()
	} else {
		kit.FetchesTotal.WithLabelValues("unchanged").Inc()
	}

	// Fail closed: a revision that does not verify is never published. The previous
	// artifact stays, so nothing of this revision is rendered or applied; a new commit
	// (or new keys) is looked at again at the interval.
	var signer string
	if keys != nil {
		if signer, err = verifyGit(obj, artifact, keys); err != nil {
			r.failed(obj, gitsyncv1.VerificationFailedReason, err)
			conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
			return ctrl.Result{RequeueAfter: r.withJitter(interval)}, nil
		}
	}

	previous := obj.Status.Artifact
	if previous == nil || previous.Revision != artifact.Revision || previous.Digest != artifact.Digest || previous.Signer != signer {
		obj.Status.Artifact = &gitsyncv1.Artifact{
			Revision:       artifact.Revision,
			Digest:         artifact.Digest,
			LastUpdateTime: metav1.NewTime(r.now()),
			Signer:         signer,
		}
		log.Info("new artifact", "revision", artifact.Revision, "digest", artifact.Digest)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, "NewArtifact", "Fetch",
			"stored artifact for revision %s", artifact.Revision)
	}
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	conditions.Delete(obj, gitsyncv1.StalledCondition)
	conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason,
		"stored artifact for revision %s", artifact.Revision)
	return ctrl.Result{RequeueAfter: r.withJitter(interval)}, nil
}

// fail records a failed poll: Ready=False with the reason (the artifact is kept), a
// Warning event when the reason or message is new, and Stalled plus a terminal error when
// only a spec change can help. Other failures are returned for the rate-limited retry.
func (r *GitRepositoryReconciler) fail(obj *gitsyncv1.GitRepository, reason string, err error, terminal bool) (ctrl.Result, error) {
	return failSource(r.Recorder, obj, reason, err, terminal)
}

func (r *GitRepositoryReconciler) failed(obj *gitsyncv1.GitRepository, reason string, err error) {
	sourceFailed(r.Recorder, obj, reason, err)
}

// sourceObject is a GitRepository or a HelmRepository.
type sourceObject interface {
	client.Object
	conditions.Setter
}

// failSource is fail for any source kind.
func failSource(rec recorder.EventRecorder, obj sourceObject, reason string, err error, terminal bool) (ctrl.Result, error) {
	sourceFailed(rec, obj, reason, err)
	if terminal {
		conditions.MarkStalled(obj, reason, "%s", err)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	return ctrl.Result{}, err
}

// sourceFailed marks a source Ready=False, with a Warning event when the reason or
// message is new.
func sourceFailed(rec recorder.EventRecorder, obj sourceObject, reason string, err error) {
	msg := err.Error()
	if !conditions.IsFalse(obj, gitsyncv1.ReadyCondition) ||
		conditions.GetReason(obj, gitsyncv1.ReadyCondition) != reason ||
		conditions.GetMessage(obj, gitsyncv1.ReadyCondition) != msg {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Fetch", "%s", msg)
	}
	conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, reason, "%s", msg)
}

func (r *GitRepositoryReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *GitRepositoryReconciler) withJitter(d time.Duration) time.Duration {
	return kit.WithJitter(r.Jitter, d)
}

// maxSizeOf is spec.maxSize in bytes (its default when unset; 0: no limit).
func maxSizeOf(obj *gitsyncv1.GitRepository) int64 {
	q := gitsyncv1.DefaultGitRepositoryMaxSize
	if obj.Spec.MaxSize != nil {
		q = *obj.Spec.MaxSize
	}
	return max(q.Value(), 0)
}

func refOf(obj *gitsyncv1.GitRepository) source.Ref {
	if obj.Spec.Ref == nil {
		return source.Ref{}
	}
	return source.Ref{
		Branch: obj.Spec.Ref.Branch,
		Tag:    obj.Spec.Ref.Tag,
		SemVer: obj.Spec.Ref.SemVer,
		Commit: obj.Spec.Ref.Commit,
	}
}

// CheckoutsInUse returns the checkout directory names (source.DirName) that some
// GitRepository's artifact points at; the others may be garbage-collected.
func CheckoutsInUse(ctx context.Context, c client.Client) (map[string]bool, error) {
	repos := &gitsyncv1.GitRepositoryList{}
	if err := c.List(ctx, repos); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for i := range repos.Items {
		if a := kit.CurrentArtifact(&repos.Items[i]); a != nil {
			keep[sourceid.DirName(&repos.Items[i], a.Commit)] = true
		}
	}
	return keep, nil
}
