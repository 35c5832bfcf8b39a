package sources

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

// OCIPuller is what the OCIRepository reconciler needs of internal/oci.
type OCIPuller interface {
	Pull(ctx context.Context, req oci.Request) (*oci.Artifact, error)
}

// OCIRepositoryReconciler polls OCI repositories (a tag list for semver, a HEAD of the
// manifest; a pull only when the digest moved) and records their artifacts in status.
type OCIRepositoryReconciler struct {
	client.Client
	// APIReader reads Secrets uncached, so that their data is never held in the cache.
	APIReader client.Reader
	Puller    OCIPuller
	Recorder  recorder.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Jitter returns the extra delay added to an interval; none when nil.
	Jitter func(time.Duration) time.Duration
	// Shard is the part of the OCIRepositories this replica polls; the zero Shard is all.
	Shard shard.Shard
	// Caps bound spec.interval, spec.timeout and the artifact's size (gitsync run
	// --min-interval, --max-timeout, --max-artifact-size).
	Caps limits.Caps
	// SecretAccess, in tenant mode, checks that the namespace's tenant account may get
	// spec.secretRef before the operator reads it (nil: no check).
	SecretAccess *SecretAccess
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=ocirepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=ocirepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=ocirepositories/finalizers,verbs=update

var ociRepositoryOwnedConditions = []string{
	gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition,
}

// Reconcile polls the repository and records its artifact. Status is written once, by the
// deferred patch (and before the first pull, to show progress).
func (r *OCIRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	obj := &gitsyncv1.OCIRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(obj) {
		return ctrl.Result{}, nil
	}
	if obj.Spec.Suspend {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, skipping")
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(obj, r.Client)
	defer func() {
		obj.Status.LastHandledReconcileAt = kit.RequestHandled(obj, obj.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, obj, ociRepositoryOwnedConditions, true))
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.OCIRepositoryKind).Observe(r.now().Sub(start).Seconds())
	}()
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "pulling %s", redact.URL(obj.Spec.URL))
	if obj.Status.Artifact == nil || obj.Generation != obj.Status.ObservedGeneration {
		patcher.PatchSoon(ctx, obj)
	}
	return r.reconcileArtifact(ctx, obj)
}

// verifier is the check of spec.verify (nil without it): internal/verify.OCI with the
// provider and the keys of spec.verify.secretRef, read once tenant mode allows it; and
// the Secret's resourceVersion, which a recorded signer must have been verified with.
func (r *OCIRepositoryReconciler) verifier(ctx context.Context, obj *gitsyncv1.OCIRepository) (func(context.Context, name.Digest, []remote.Option) (string, error), string, error) {
	v := obj.Spec.Verify
	if v == nil {
		return nil, "", nil
	}
	if v.SecretRef == nil {
		return nil, "", fmt.Errorf("spec.verify.secretRef is required: it names the Secret with the trusted keys (cosign public keys or trusted_root.json, notation CA certificates)")
	}
	if err := r.SecretAccess.Check(ctx, obj.Namespace, v.SecretRef.Name); err != nil {
		return nil, "", err
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: v.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, "", fmt.Errorf("reading the verification secret %s: %w", key, err)
	}
	check := verify.OCICheck{Provider: v.Provider, Keys: secret.Data, Identities: oidcIdentities(v.MatchOIDCIdentity)}
	return func(ctx context.Context, ref name.Digest, opts []remote.Option) (string, error) {
		signer, err := verify.OCI(ctx, ref, check, opts...)
		if err != nil {
			return "", err
		}
		return signer.String(), nil
	}, secret.ResourceVersion, nil
}

// reconcileArtifact reads the credentials and pulls (nothing is downloaded when the
// manifest's digest did not move). Sets Ready (True, or False with the reason), Stalled
// for what only a spec change can fix, and removes Reconciling. A failed poll keeps the
// last artifact.
func (r *OCIRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *gitsyncv1.OCIRepository) (ctrl.Result, error) {
	interval, n1 := r.Caps.Interval("spec.interval", obj.GetInterval().Duration)
	if obj.Spec.SecretRef != nil {
		if err := r.SecretAccess.Check(ctx, obj.Namespace, obj.Spec.SecretRef.Name); err != nil {
			return r.fail(obj, gitsyncv1.AccessDeniedReason, err, false)
		}
	}
	request, err := sourceid.OCIRequest(ctx, r.APIReader, obj)
	if errors.Is(err, oci.ErrURLInvalid) {
		return r.fail(obj, gitsyncv1.URLInvalidReason, err, true)
	}
	if err != nil {
		return r.fail(obj, gitsyncv1.SecretNotFoundReason, err, false)
	}
	// Fail closed: without a verifier nothing is pulled, and the last artifact stays.
	var secretVersion string
	if request.Verify, secretVersion, err = r.verifier(ctx, obj); err != nil {
		return r.fail(obj, gitsyncv1.VerificationFailedReason, err, false)
	}
	prev := obj.Status.Artifact
	// Verified with these keys before: another version of the Secret verifies again.
	request.Verified = prev != nil && prev.Signer != "" && obj.Generation == obj.Status.ObservedGeneration &&
		prev.VerificationSecretVersion == secretVersion
	// No spec field asks for a size: the operator's --max-artifact-size, when lower than
	// the default, is the bound, with no note.
	request.MaxSize = oci.DefaultMaxSize
	if m := r.Caps.MaxArtifactSize; m > 0 && m < request.MaxSize {
		request.MaxSize = m
	}
	var n2 string
	request.Timeout, n2 = r.Caps.Timeout("spec.timeout", request.Timeout)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, n1, n2)
	artifact, err := r.Puller.Pull(ctx, request)
	if err != nil {
		kit.FetchesTotal.WithLabelValues("failed").Inc()
		switch {
		case errors.Is(err, oci.ErrVerification):
			// A signature may be pushed later: looked at again at the interval.
			sourceFailed(r.Recorder, obj, gitsyncv1.VerificationFailedReason, err)
			conditions.MarkStalled(obj, gitsyncv1.VerificationFailedReason, "%s", err)
			return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, interval)}, nil
		case errors.Is(err, oci.ErrUnauthorized):
			return r.fail(obj, gitsyncv1.AuthenticationFailedReason, err, false)
		case errors.Is(err, oci.ErrRefNotFound):
			// The tag may still be pushed: looked at again at the interval.
			sourceFailed(r.Recorder, obj, gitsyncv1.RefNotFoundReason, err)
			conditions.MarkStalled(obj, gitsyncv1.RefNotFoundReason, "%s", err)
			return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, interval)}, nil
		case errors.Is(err, oci.ErrURLInvalid):
			return r.fail(obj, gitsyncv1.URLInvalidReason, err, true)
		case errors.Is(err, oci.ErrRefInvalid):
			return r.fail(obj, gitsyncv1.RefInvalidReason, err, true)
		case errors.Is(err, oci.ErrTooLarge), errors.Is(err, oci.ErrLayerInvalid):
			// A new push may fix it: looked at again at the interval, not in a fast loop.
			reason := gitsyncv1.TooLargeReason
			if errors.Is(err, oci.ErrLayerInvalid) {
				reason = gitsyncv1.LayerInvalidReason
			}
			sourceFailed(r.Recorder, obj, reason, err)
			conditions.MarkStalled(obj, reason, "%s", err)
			return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, interval)}, nil
		default:
			return r.fail(obj, gitsyncv1.FetchFailedReason, err, false)
		}
	}
	if artifact.Fetched {
		kit.FetchesTotal.WithLabelValues("fetched").Inc()
	} else {
		kit.FetchesTotal.WithLabelValues("unchanged").Inc()
	}
	r.record(ctx, obj, artifact, secretVersion)
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	conditions.Delete(obj, gitsyncv1.StalledCondition)
	conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "stored artifact for revision %s", artifact.Revision)
	return ctrl.Result{RequeueAfter: kit.WithJitter(r.Jitter, interval)}, nil
}

// record writes a new artifact into status, with an event; an unchanged one stays as it is.
// secretVersion is the verification Secret's resourceVersion a new signer was verified
// with.
func (r *OCIRepositoryReconciler) record(ctx context.Context, obj *gitsyncv1.OCIRepository, a *oci.Artifact, secretVersion string) {
	prev := obj.Status.Artifact
	signer := a.Signer
	if signer == "" {
		secretVersion = ""
	}
	if signer == "" && obj.Spec.Verify != nil && prev != nil && prev.Digest == a.Digest {
		signer, secretVersion = prev.Signer, prev.VerificationSecretVersion // verified before, not again
	}
	if prev != nil && prev.Revision == a.Revision && prev.Digest == a.Digest && prev.URL == a.URL && prev.Signer == signer {
		prev.VerificationSecretVersion = secretVersion // verified again with a new Secret: not a new artifact
		return
	}
	metadata := a.Metadata
	if !a.Fetched && prev != nil && prev.Digest == a.Digest {
		metadata = maps.Clone(prev.Metadata) // a new tag of the same digest: nothing was read
	}
	obj.Status.Artifact = &gitsyncv1.OCIArtifact{Revision: a.Revision, Digest: a.Digest, URL: a.URL,
		Metadata: metadata, Signer: signer, VerificationSecretVersion: secretVersion, LastUpdateTime: metav1.NewTime(r.now())}
	ctrl.LoggerFrom(ctx).Info("new artifact", "revision", a.Revision, "digest", a.Digest)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, "NewArtifact", "Fetch", "stored artifact for revision %s", a.Revision)
}

func (r *OCIRepositoryReconciler) fail(obj *gitsyncv1.OCIRepository, reason string, err error, terminal bool) (ctrl.Result, error) {
	return failSource(r.Recorder, obj, reason, err, terminal)
}

func (r *OCIRepositoryReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// OCIArtifactsInUse returns the directories (sourceid.OCICheckoutDir) of the artifacts
// that OCIRepositories point at and that their Applications last applied (through
// spec.sourceRef or any of spec.sources); the others may be garbage-collected.
func OCIArtifactsInUse(ctx context.Context, c client.Client, store sourceid.OCIArtifacts) (map[string]bool, error) {
	repos := &gitsyncv1.OCIRepositoryList{}
	if err := c.List(ctx, repos); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	byKey := map[string]*gitsyncv1.OCIRepository{}
	for i := range repos.Items {
		repo := &repos.Items[i]
		byKey[client.ObjectKeyFromObject(repo).String()] = repo
		if a := repo.Status.Artifact; a != nil {
			keep[sourceid.OCICheckoutDir(store, repo, a.Digest)] = true
		}
	}
	apps := &gitsyncv1.ApplicationList{}
	if err := c.List(ctx, apps); err != nil {
		return nil, err
	}
	for i := range apps.Items {
		app := &apps.Items[i]
		for j := range app.SourceList() { // spec.sourceRef, or each of spec.sources
			view := app.ForSource(j)
			repo := byKey[sourceid.Key(view).String()]
			if view.Spec.SourceRef.Kind != gitsyncv1.OCIRepositoryKind || repo == nil {
				continue
			}
			rev := app.RevisionOf(j, app.Status.LastAppliedRevision) // `<tag>@sha256:<hex>`
			if k := strings.LastIndex(rev, "sha256:"); k >= 0 {
				keep[sourceid.OCICheckoutDir(store, repo, rev[k:])] = true
			}
		}
	}
	return keep, nil
}

// oidcIdentities is spec.verify.matchOIDCIdentity as internal/verify takes it.
func oidcIdentities(in []gitsyncv1.OIDCIdentityMatch) []verify.Identity {
	out := make([]verify.Identity, 0, len(in))
	for _, m := range in {
		out = append(out, verify.Identity{Issuer: m.Issuer, Subject: m.Subject})
	}
	return out
}
