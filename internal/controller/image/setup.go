package image

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/imagescan"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// Options configure the three controllers.
type Options struct {
	kit.Options
	// StoragePath holds the tag lists (imagetags/) and the automations' clones (imageupdate/).
	StoragePath string
	// Egress guards every registry and Git address dialled.
	Egress *egress.Guard
	// Caps bound intervals and timeouts.
	Caps limits.Caps
	// AllowCrossNamespaceRefs lets a policy or an automation name another namespace.
	AllowCrossNamespaceRefs bool
	// AllowFileURLs lets an automation push to a file:// GitRepository (tests, demo).
	AllowFileURLs bool
	// Shard is the part of the objects this replica reconciles.
	Shard shard.Shard
	// Recorder receives the events (the manager's when nil).
	Recorder recorder.EventRecorder
	// SecretAccess, in tenant mode, checks that the namespace's tenant account may get a
	// Secret before the operator reads it for an object of that namespace; nil checks nothing.
	SecretAccess SecretChecker
}

// SecretChecker says whether the operator may read a Secret for an object of namespace
// (internal/controller/sources' SecretAccess in tenant mode).
type SecretChecker interface {
	CheckSecret(ctx context.Context, namespace, name string) error
}

// Index of ImagePolicies by the namespace/name of their ImageRepository.
const policyRepositoryIndex = ".spec.imageRepositoryRef"

// Setup registers the three controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Recorder == nil {
		opts.Recorder = kit.EventRecorder(mgr)
	}
	store, err := imagescan.NewStore(opts.StoragePath)
	if err != nil {
		return err
	}
	scanner := imagescan.New(imagescan.Options{Egress: opts.Egress})
	base := reconcilerBase{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: opts.Recorder,
		Caps: opts.Caps, Shard: opts.Shard, AllowCrossNamespaceRefs: opts.AllowCrossNamespaceRefs, SecretAccess: opts.SecretAccess}

	repos := &RepositoryReconciler{reconcilerBase: base, Scanner: scanner, Store: store}
	b := ctrl.NewControllerManagedBy(mgr).Named("imagerepository").
		For(&gitsyncv1.ImageRepository{}, builder.WithPredicates(kit.InShard(opts.Shard), kit.NotRequested(),
			predicate.GenerationChangedPredicate{}))
	if err := opts.Apply(kit.RequestedNow(b, &gitsyncv1.ImageRepository{})).Complete(repos); err != nil {
		return fmt.Errorf("setting up the ImageRepository controller: %w", err)
	}

	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gitsyncv1.ImagePolicy{}, policyRepositoryIndex, func(o client.Object) []string {
		p := o.(*gitsyncv1.ImagePolicy)
		return []string{p.RepositoryNamespace() + "/" + p.Spec.ImageRepositoryRef.Name}
	}); err != nil {
		return err
	}
	policies := &PolicyReconciler{reconcilerBase: base, Scanner: scanner, Store: store}
	b = ctrl.NewControllerManagedBy(mgr).Named("imagepolicy").
		For(&gitsyncv1.ImagePolicy{}, builder.WithPredicates(kit.InShard(opts.Shard), kit.NotRequested(),
			predicate.GenerationChangedPredicate{})).
		Watches(&gitsyncv1.ImageRepository{}, handler.EnqueueRequestsFromMapFunc(policies.forRepository),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}))
	if err := opts.Apply(kit.RequestedNow(b, &gitsyncv1.ImagePolicy{})).Complete(policies); err != nil {
		return fmt.Errorf("setting up the ImagePolicy controller: %w", err)
	}

	updates := &UpdateReconciler{reconcilerBase: base, WorkDir: filepath.Join(opts.StoragePath, "imageupdate"),
		Egress: opts.Egress, AllowFileURLs: opts.AllowFileURLs}
	b = ctrl.NewControllerManagedBy(mgr).Named("imageupdateautomation").
		For(&gitsyncv1.ImageUpdateAutomation{}, builder.WithPredicates(kit.InShard(opts.Shard), kit.NotRequested(),
			predicate.GenerationChangedPredicate{})).
		Watches(&gitsyncv1.ImagePolicy{}, handler.EnqueueRequestsFromMapFunc(updates.forPolicy),
			builder.WithPredicates(latestRefChanged{}))
	if err := opts.Apply(kit.RequestedNow(b, &gitsyncv1.ImageUpdateAutomation{})).Complete(updates); err != nil {
		return fmt.Errorf("setting up the ImageUpdateAutomation controller: %w", err)
	}
	return nil
}

// reconcilerBase is what the three reconcilers share.
type reconcilerBase struct {
	client.Client
	// APIReader reads Secrets uncached.
	APIReader               client.Reader
	Recorder                recorder.EventRecorder
	Caps                    limits.Caps
	Shard                   shard.Shard
	AllowCrossNamespaceRefs bool
	// SecretAccess checks a Secret before it is read (nil: no check).
	SecretAccess SecretChecker
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (r *reconcilerBase) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ownedConditions are the condition types the image controllers write.
var ownedConditions = []string{gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition}

// conditioned is an image kind with conditions.
type conditioned interface {
	client.Object
	conditions.Setter
}

// fail marks obj Ready=False with reason (a Warning event when new); terminal failures
// (only a spec change can fix them) are Stalled and not retried.
func (r *reconcilerBase) fail(obj conditioned, reason, action string, err error, terminal bool) (ctrl.Result, error) {
	msg := err.Error()
	if !conditions.IsFalse(obj, gitsyncv1.ReadyCondition) || conditions.GetReason(obj, gitsyncv1.ReadyCondition) != reason ||
		conditions.GetMessage(obj, gitsyncv1.ReadyCondition) != msg {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, action, "%s", msg)
	}
	conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, reason, "%s", msg)
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	if terminal {
		conditions.MarkStalled(obj, reason, "%s", msg)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	conditions.Delete(obj, gitsyncv1.StalledCondition)
	return ctrl.Result{}, err
}

// wait marks obj Ready=False with reason, for a state another object's change ends (no
// error: a watch brings the object back).
func (r *reconcilerBase) wait(obj conditioned, reason, format string, args ...any) {
	conditions.MarkFalse(obj, gitsyncv1.ReadyCondition, reason, format, args...)
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	conditions.Delete(obj, gitsyncv1.StalledCondition)
}

// secretReason is the Ready=False reason of a failure to read a Secret.
func secretReason(err error) string {
	if errors.Is(err, errSecretDenied) {
		return gitsyncv1.AccessDeniedReason
	}
	return gitsyncv1.SecretNotFoundReason
}

// succeed marks obj Ready=True.
func succeed(obj conditioned, format string, args ...any) {
	conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
	conditions.Delete(obj, gitsyncv1.StalledCondition)
	conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, format, args...)
}

// crossNamespace refuses a reference to namespace ns from obj unless allowed.
func (r *reconcilerBase) crossNamespace(obj client.Object, field, ns string) error {
	if ns == obj.GetNamespace() || r.AllowCrossNamespaceRefs {
		return nil
	}
	return fmt.Errorf("%s names namespace %q: cross-namespace references are not allowed (gitsync run --allow-cross-namespace-refs)", field, ns)
}

// errSecretDenied: tenant mode does not let the namespace's account read the Secret.
var errSecretDenied = errors.New("secret access denied")

// secretData reads a Secret of namespace ns uncached, once SecretAccess allows it.
func (r *reconcilerBase) secretData(ctx context.Context, ns, name string) (map[string][]byte, error) {
	if r.SecretAccess != nil {
		if err := r.SecretAccess.CheckSecret(ctx, ns, name); err != nil {
			return nil, fmt.Errorf("%w: %v", errSecretDenied, err)
		}
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading secret %s: %w", name, err)
	}
	return s.Data, nil
}
