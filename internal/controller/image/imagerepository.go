package image

import (
	"context"
	"errors"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/imagescan"
)

// RepositoryReconciler scans ImageRepositories: the tags go to the store, a summary to status.
type RepositoryReconciler struct {
	reconcilerBase
	Scanner *imagescan.Scanner
	Store   *imagescan.Store
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=imagerepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=imagerepositories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile scans the repository. Status is written once, by the deferred patch.
func (r *RepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	obj := &gitsyncv1.ImageRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return ctrl.Result{}, r.Store.Delete(req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if !r.Shard.Owns(obj) || obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(obj, r.Client)
	defer func() {
		obj.Status.LastHandledReconcileAt = kit.RequestHandled(obj, obj.Status.LastHandledReconcileAt)
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, obj, ownedConditions, true))
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.ImageRepositoryKind).Observe(r.now().Sub(start).Seconds())
	}()
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "scanning %s", obj.Spec.Image)
	return r.scan(ctx, obj)
}

// scan lists the tags and stores them. Sets Ready (True with the tag count, or False:
// SecretNotFound, ScanFailed; Stalled for what only a spec change fixes: a bad image
// name or exclusion, a registry refused by the egress guard, more tags than allowed).
func (r *RepositoryReconciler) scan(ctx context.Context, obj *gitsyncv1.ImageRepository) (ctrl.Result, error) {
	req := imagescan.Request{Image: obj.Spec.Image, Insecure: obj.Spec.Insecure, Exclusions: obj.Spec.ExclusionList}
	if obj.Spec.ExclusionList == nil {
		req.Exclusions = imagescan.DefaultExclusions
	}
	if _, err := imagescan.ParseImage(obj.Spec.Image, obj.Spec.Insecure); err != nil {
		return r.fail(obj, gitsyncv1.ScanFailedReason, "Scan", err, true)
	}
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return r.fail(obj, secretReason(err), "Scan", err, false)
		}
		req.DockerConfigJSON = data[imagescan.DockerConfigKey]
	}
	timeout, note := r.Caps.Timeout("spec.timeout", obj.GetTimeout().Duration)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, note)
	req.Timeout = timeout
	res, err := r.Scanner.Scan(ctx, req)
	if err != nil {
		terminal := errors.Is(err, imagescan.ErrTooLarge) || errors.Is(err, egress.ErrDenied)
		return r.fail(obj, gitsyncv1.ScanFailedReason, "Scan", err, terminal)
	}
	if err := r.Store.Save(obj.Namespace, obj.Name, res.Tags); err != nil {
		return r.fail(obj, gitsyncv1.StorageFailedReason, "Scan", err, false)
	}
	now := metav1.NewTime(r.now())
	obj.Status.CanonicalImageName = res.Canonical
	obj.Status.LastScanResult = &gitsyncv1.ScanResult{TagCount: len(res.Tags),
		LatestTags: imagescan.LatestTags(res.Tags, gitsyncv1.MaxLatestTags), ScanTime: &now}
	ctrl.LoggerFrom(ctx).V(1).Info("scanned", "tags", len(res.Tags))
	succeed(obj, "successful scan: found %d tags", len(res.Tags))
	return ctrl.Result{RequeueAfter: r.interval(obj)}, nil
}

func (r *RepositoryReconciler) interval(obj *gitsyncv1.ImageRepository) time.Duration {
	d, note := r.Caps.Interval("spec.interval", obj.GetInterval().Duration)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, note)
	return d
}
