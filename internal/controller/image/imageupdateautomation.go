package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/imageupdate"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// UpdateReconciler runs ImageUpdateAutomations: rewrite, commit, push, wake the source.
type UpdateReconciler struct {
	reconcilerBase
	// WorkDir holds the runs' temporary clones.
	WorkDir       string
	Egress        *egress.Guard
	AllowFileURLs bool
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=imageupdateautomations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=imageupdateautomations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gitsync.dev,resources=gitrepositories,verbs=get;list;watch;update;patch

// Reconcile runs the automation. Status is written once, by the deferred patch.
func (r *UpdateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.now()
	obj := &gitsyncv1.ImageUpdateAutomation{}
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
		kit.ReconcileDuration.WithLabelValues(gitsyncv1.ImageUpdateAutomationKind).Observe(r.now().Sub(start).Seconds())
	}()
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "updating images")
	res, err := r.update(ctx, obj)
	if err != nil || conditions.IsStalled(obj) {
		return res, err
	}
	interval, note := r.Caps.Interval("spec.interval", obj.GetInterval().Duration)
	kit.Capped(r.Recorder, obj, obj.Generation != obj.Status.ObservedGeneration, note)
	return ctrl.Result{RequeueAfter: interval}, nil
}

// update resolves the source and the policies, runs the update and records it. Sets
// Ready (True: pushed, or nothing to change; False: AccessDenied and URLInvalid
// (Stalled), ArtifactNotReady for a missing GitRepository, SecretNotFound, UpdateFailed).
func (r *UpdateReconciler) update(ctx context.Context, obj *gitsyncv1.ImageUpdateAutomation) (ctrl.Result, error) {
	srcKey := client.ObjectKey{Namespace: obj.SourceNamespace(), Name: obj.Spec.SourceRef.Name}
	if err := r.crossNamespace(obj, "spec.sourceRef.namespace", srcKey.Namespace); err != nil {
		return r.fail(obj, gitsyncv1.AccessDeniedReason, "Update", err, true)
	}
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, srcKey, repo); err != nil {
		if apierrors.IsNotFound(err) {
			r.wait(obj, gitsyncv1.ArtifactNotReadyReason, "GitRepository %s not found", srcKey)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if err := r.checkURL(repo.Spec.URL); err != nil {
		return r.fail(obj, gitsyncv1.URLInvalidReason, "Update", err, true)
	}
	req, err := r.request(ctx, obj, repo)
	if err != nil {
		return r.fail(obj, secretReason(err), "Update", err, false)
	}
	if req.CheckoutBranch == "" {
		return r.fail(obj, gitsyncv1.UpdateFailedReason, "Update",
			errors.New("no branch to update: set spec.git.checkout.ref.branch or the GitRepository's spec.ref.branch"), true)
	}
	if err := os.MkdirAll(r.WorkDir, 0o700); err != nil {
		return r.fail(obj, gitsyncv1.StorageFailedReason, "Update", err, false)
	}
	res, err := imageupdate.Run(ctx, req)
	now := metav1.NewTime(r.now())
	obj.Status.LastAutomationRunTime = &now
	if err != nil {
		return r.fail(obj, gitsyncv1.UpdateFailedReason, "Update", err, false)
	}
	if res.Commit == "" {
		succeed(obj, "no change: every marked field is up to date")
		return ctrl.Result{}, nil
	}
	obj.Status.LastPushCommit, obj.Status.LastPushTime = res.Commit, &now
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, gitsyncv1.PushedReason, "Update",
		"pushed commit %s to %s (%d fields changed)", shortSHA(res.Commit), res.Branch, len(res.Changes))
	ctrl.LoggerFrom(ctx).Info("pushed", "commit", res.Commit, "branch", res.Branch, "changes", len(res.Changes))
	if err := r.wake(ctx, repo); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "requesting a reconcile of the GitRepository")
	}
	succeed(obj, "pushed commit %s to %s", shortSHA(res.Commit), res.Branch)
	return ctrl.Result{}, nil
}

// request builds the run: the GitRepository's own credentials (its namespace is the
// automation's unless cross-namespace references are allowed) and its bounds (timeout,
// maxSize: what an http(s) clone may read), the selected policies' images, the signing key.
func (r *UpdateReconciler) request(ctx context.Context, obj *gitsyncv1.ImageUpdateAutomation, repo *gitsyncv1.GitRepository) (imageupdate.Request, error) {
	timeout, _ := r.Caps.Timeout("spec.timeout", repo.GetTimeout().Duration)
	maxSize := gitsyncv1.DefaultGitRepositoryMaxSize.Value()
	if repo.Spec.MaxSize != nil {
		maxSize = repo.Spec.MaxSize.Value()
	}
	maxSize, _ = r.Caps.ArtifactSize("spec.maxSize", maxSize)
	req := imageupdate.Request{URL: repo.Spec.URL, Egress: r.Egress, Timeout: timeout, MaxBytes: maxSize, WorkDir: r.WorkDir,
		Path: obj.UpdatePath(), Automation: obj.Namespace + "/" + obj.Name,
		AuthorName: obj.Spec.GitSpec.Commit.Author.Name, AuthorEmail: obj.Spec.GitSpec.Commit.Author.Email,
		MessageTemplate: obj.Spec.GitSpec.Commit.MessageTemplate}
	if c := obj.Spec.GitSpec.Checkout; c != nil && c.Reference.Branch != "" {
		req.CheckoutBranch = c.Reference.Branch
	} else if repo.Spec.Ref != nil {
		req.CheckoutBranch = repo.Spec.Ref.Branch
	}
	if p := obj.Spec.GitSpec.Push; p != nil {
		req.PushBranch, req.PushRefspec = p.Branch, p.Refspec
	}
	if ref := repo.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, repo.Namespace, ref.Name)
		if err != nil {
			return req, err
		}
		if req.Auth, err = source.AuthFromSecret(data); err != nil {
			return req, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
	}
	if sk := obj.Spec.GitSpec.Commit.SigningKey; sk != nil {
		data, err := r.secretData(ctx, obj.Namespace, sk.SecretRef.Name)
		if err != nil {
			return req, err
		}
		if req.Signer, err = imageupdate.SignerFromSecret(data); err != nil {
			return req, fmt.Errorf("secret %s: %w", sk.SecretRef.Name, err)
		}
	}
	values, observed, err := r.policies(ctx, obj)
	if err != nil {
		return req, err
	}
	req.Values, obj.Status.ObservedPolicies = values, observed
	return req, nil
}

// policies are the Ready policies of the automation's namespace that policySelector selects.
func (r *UpdateReconciler) policies(ctx context.Context, obj *gitsyncv1.ImageUpdateAutomation) (imageupdate.Values, map[string]gitsyncv1.ImageRef, error) {
	opts := []client.ListOption{client.InNamespace(obj.Namespace)}
	if sel := obj.Spec.PolicySelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.policySelector: %w", err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: s})
	}
	list := &gitsyncv1.ImagePolicyList{}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, nil, fmt.Errorf("listing image policies: %w", err)
	}
	values, observed := imageupdate.Values{}, map[string]gitsyncv1.ImageRef{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.LatestRef == nil || !isReady(p) {
			continue
		}
		values[p.Namespace+":"+p.Name] = *p.Status.LatestRef
		observed[p.Name] = *p.Status.LatestRef
	}
	return values, observed, nil
}

// checkURL refuses a file:// (or bare path) URL in the operator: a tenant's would make
// the operator write to its own disk.
func (r *UpdateReconciler) checkURL(raw string) error {
	if r.AllowFileURLs {
		return nil
	}
	if strings.HasPrefix(raw, "file:") || strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, ".") {
		return fmt.Errorf("the GitRepository's URL is a local path: the operator pushes only to remote repositories")
	}
	return nil
}

// wake asks the GitRepository to reconcile now (the requested-at annotation, as
// `gitsync reconcile source` does), so that the pushed commit applies at once.
func (r *UpdateReconciler) wake(ctx context.Context, repo *gitsyncv1.GitRepository) error {
	base := repo.DeepCopy()
	gitsyncv1.RequestReconcile(repo, r.now())
	return r.Patch(ctx, repo, client.MergeFrom(base))
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// forPolicy enqueues the automations of a policy's namespace.
func (r *UpdateReconciler) forPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	list := &gitsyncv1.ImageUpdateAutomationList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing image update automations")
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

// latestRefChanged passes a policy whose chosen image changed (or that came or went).
type latestRefChanged struct{ predicate.Funcs }

func (latestRefChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*gitsyncv1.ImagePolicy)
	n, ok2 := e.ObjectNew.(*gitsyncv1.ImagePolicy)
	if !ok1 || !ok2 {
		return true
	}
	return (o.Status.LatestRef == nil) != (n.Status.LatestRef == nil) ||
		(n.Status.LatestRef != nil && *o.Status.LatestRef != *n.Status.LatestRef)
}
