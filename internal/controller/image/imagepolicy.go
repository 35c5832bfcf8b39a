package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/imagepolicy"
	"github.com/gitsync-dev/gitsync/internal/imagescan"
)

// PolicyReconciler chooses each ImagePolicy's latest image from its repository's stored tags.
type PolicyReconciler struct {
	reconcilerBase
	Scanner *imagescan.Scanner
	Store   *imagescan.Store
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=imagepolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=imagepolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile chooses the policy's image. Status is written once, by the deferred patch.
func (r *PolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &gitsyncv1.ImagePolicy{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(obj) || obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(obj, r.Client)
	defer func() {
		obj.Status.LastHandledReconcileAt = kit.RequestHandled(obj, obj.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, obj, ownedConditions, true))
	}()
	return r.choose(ctx, obj)
}

// choose reads the repository's tags and applies the policy. Sets Ready (True with the
// image; False: AccessDenied, ImageRepositoryNotReady, NoMatchingTag, PolicyInvalid
// (Stalled), ScanFailed for a failed digest lookup), and records the change in
// latestRef with an event.
func (r *PolicyReconciler) choose(ctx context.Context, obj *gitsyncv1.ImagePolicy) (ctrl.Result, error) {
	repoKey := client.ObjectKey{Namespace: obj.RepositoryNamespace(), Name: obj.Spec.ImageRepositoryRef.Name}
	if err := r.crossNamespace(obj, "spec.imageRepositoryRef.namespace", repoKey.Namespace); err != nil {
		return r.fail(obj, gitsyncv1.AccessDeniedReason, "Choose", err, true)
	}
	policy, err := imagepolicy.Compile(obj.Spec)
	if err != nil {
		return r.fail(obj, gitsyncv1.PolicyInvalidReason, "Choose", err, true)
	}
	repo := &gitsyncv1.ImageRepository{}
	if err := r.Get(ctx, repoKey, repo); err != nil {
		if apierrors.IsNotFound(err) {
			r.wait(obj, gitsyncv1.ImageRepositoryNotReadyReason, "ImageRepository %s not found", repoKey)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	tags, err := r.Store.Load(repoKey.Namespace, repoKey.Name)
	if errors.Is(err, imagescan.ErrNotScanned) {
		r.wait(obj, gitsyncv1.ImageRepositoryNotReadyReason, "ImageRepository %s has not been scanned yet", repoKey)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return r.fail(obj, gitsyncv1.StorageFailedReason, "Choose", err, false)
	}
	tag, err := policy.Latest(tags)
	if errors.Is(err, imagepolicy.ErrNoMatch) {
		r.wait(obj, gitsyncv1.NoMatchingTagReason, "no tag of %s (%d tags) matches the policy", repo.Spec.Image, len(tags))
		return ctrl.Result{}, nil
	}
	ref := gitsyncv1.ImageRef{Name: repo.Spec.Image, Tag: tag}
	prev := obj.Status.LatestRef
	if imagepolicy.NeedsDigest(obj.Spec.DigestReflectionPolicy, prev, tag) {
		if ref.Digest, err = r.digest(ctx, repo, tag); err != nil {
			reason := gitsyncv1.ScanFailedReason
			if errors.Is(err, errSecretDenied) {
				reason = gitsyncv1.AccessDeniedReason
			}
			return r.fail(obj, reason, "Choose", err, false)
		}
	} else if obj.Spec.DigestReflectionPolicy == gitsyncv1.ReflectIfNotPresent && prev != nil {
		ref.Digest = prev.Digest
	}
	if prev == nil || *prev != ref {
		if prev != nil {
			p := *prev
			obj.Status.ObservedPreviousRef = &p
		}
		obj.Status.LatestRef = &ref
		was := "nothing"
		if prev != nil {
			was = prev.String()
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, gitsyncv1.LatestRefChangedReason, "Choose",
			"latest image is %s (was %s)", ref.String(), was)
	}
	succeed(obj, "latest image is %s", ref.String())
	if obj.Spec.DigestReflectionPolicy == gitsyncv1.ReflectAlways {
		d, _ := r.Caps.Interval("spec.interval", repo.GetInterval().Duration)
		return ctrl.Result{RequeueAfter: d}, nil
	}
	return ctrl.Result{}, nil
}

// digest looks up the manifest digest of repo's image:tag with repo's credentials.
func (r *PolicyReconciler) digest(ctx context.Context, repo *gitsyncv1.ImageRepository, tag string) (string, error) {
	req := imagescan.Request{Image: repo.Spec.Image, Insecure: repo.Spec.Insecure}
	if ref := repo.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, repo.Namespace, ref.Name)
		if err != nil {
			return "", err
		}
		req.DockerConfigJSON = data[imagescan.DockerConfigKey]
	}
	req.Timeout, _ = r.Caps.Timeout("spec.timeout", repo.GetTimeout().Duration)
	d, err := r.Scanner.Digest(ctx, req, tag)
	if err != nil {
		return "", fmt.Errorf("digest of %s:%s: %w", repo.Spec.Image, tag, err)
	}
	return d, nil
}

// forRepository enqueues the policies of a repository whose scan changed.
func (r *PolicyReconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	list := &gitsyncv1.ImagePolicyList{}
	if err := r.List(ctx, list, client.MatchingFields{policyRepositoryIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the policies of an image repository")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if r.Shard.Owns(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// isReady says whether obj's Ready condition is True.
func isReady(obj conditioned) bool { return conditions.IsTrue(obj, gitsyncv1.ReadyCondition) }
