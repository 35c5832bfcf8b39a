package operations

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/rollback"
)

// SyncOptions are the options of a sync request.
type SyncOptions struct {
	// WithSource reconciles an Application's source first, so that a new commit or chart
	// version is fetched.
	WithSource bool
	// Hooks runs an Application's hooks again (without it they run once per revision).
	Hooks bool
	// Prune, when set, prunes (or not) in this sync only, whatever spec.prune says.
	Prune *bool
	// Resources, when set, makes the sync a selective one: after a dry-run of the whole
	// revision only these objects ([GROUP/]KIND[/NAMESPACE]/NAME) are applied, and
	// nothing is pruned (gitsync.dev/sync-resources).
	Resources []string
}

// SuspendedError refuses a request of a suspended object: the request left behind would
// fire on resume.
type SuspendedError struct {
	Kind Kind
	Key  client.ObjectKey
}

func (e *SuspendedError) Error() string {
	return fmt.Sprintf("%s %s is suspended: resume it first (gitsync resume %s %s -n %s)", e.Kind.Name(), e.Key, e.Kind, e.Key.Name, e.Key.Namespace)
}

// IsSuspended tells whether err refused a request of a suspended object.
func IsSuspended(err error) bool {
	var s *SuspendedError
	return errors.As(err, &s)
}

// Get reads the object of kind k at key, saying which one is missing when it is.
func Get(ctx context.Context, c client.Reader, k Kind, key client.ObjectKey) (client.Object, error) {
	obj := k.NewObject()
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, notFoundOr(err, k, key)
	}
	return obj, nil
}

// GetApp reads the Application at key.
func GetApp(ctx context.Context, c client.Reader, key client.ObjectKey) (*gitsyncv1.Application, error) {
	obj, err := Get(ctx, c, App, key)
	if err != nil {
		return nil, err
	}
	return obj.(*gitsyncv1.Application), nil
}

func notFoundOr(err error, k Kind, key client.ObjectKey) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found in namespace %s", k.Name(), key.Name, key.Namespace)
	}
	return fmt.Errorf("reading %s %s: %w", k.Name(), key, err)
}

// Request asks for a reconcile of the object of kind k at key now (for an Application, a
// sync with opts' hooks and prune; WithSource is Reconcile's) and returns the object as
// patched and the request's value, which status.lastHandledReconcileAt takes when it
// has been handled. A suspended object is refused (SuspendedError).
func Request(ctx context.Context, c client.Client, k Kind, key client.ObjectKey, opts SyncOptions) (client.Object, string, error) {
	for _, r := range opts.Resources {
		if _, err := gitsyncv1.ParseResourceSelector(r); err != nil {
			return nil, "", err
		}
	}
	if len(opts.Resources) > gitsyncv1.MaxSyncResources {
		return nil, "", fmt.Errorf("a selective sync names at most %d resources", gitsyncv1.MaxSyncResources)
	}
	obj, err := Get(ctx, c, k, key)
	if err != nil {
		return nil, "", err
	}
	if suspended(obj) {
		return nil, "", &SuspendedError{Kind: k, Key: key}
	}
	base := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	var requested string
	if app, ok := obj.(*gitsyncv1.Application); ok {
		requested = app.RequestSync(time.Now(), opts.Hooks, opts.Prune)
		if len(opts.Resources) > 0 {
			app.Annotations[gitsyncv1.SyncResourcesAnnotation] = gitsyncv1.ResourcesRequest(opts.Resources, requested)
		}
	} else {
		requested = gitsyncv1.RequestReconcile(obj, time.Now())
	}
	if err := c.Patch(ctx, obj, base); err != nil {
		return nil, "", fmt.Errorf("requesting a reconcile of %s %s: %w", k.Name(), key, err)
	}
	return obj, requested, nil
}

// SetSuspend sets spec.suspend of the object of kind k at key. Resuming (suspend false)
// also ends an Application's rollback pin and requests a reconcile at once. It returns
// the object as patched.
func SetSuspend(ctx context.Context, c client.Client, k Kind, key client.ObjectKey, suspend bool) (client.Object, error) {
	obj, err := Get(ctx, c, k, key)
	if err != nil {
		return nil, err
	}
	base := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	switch t := obj.(type) {
	case *gitsyncv1.GitRepository:
		t.Spec.Suspend = suspend
	case *gitsyncv1.HelmRepository:
		t.Spec.Suspend = suspend
	case *gitsyncv1.OCIRepository:
		t.Spec.Suspend = suspend
	case *gitsyncv1.Application:
		t.Spec.Suspend = suspend
		if !suspend {
			t.Spec.PinnedRevision = "" // resume also ends a rollback
		}
	}
	if !suspend {
		gitsyncv1.RequestReconcile(obj, time.Now())
	}
	if err := c.Patch(ctx, obj, base); err != nil {
		return nil, fmt.Errorf("patching %s %s: %w", k.Name(), key, err)
	}
	return obj, nil
}

// Pin pins the Application at key to the revision of its history that to names
// (<ref>@sha1:<commit>, or a unique commit prefix; see rollback.Target) and returns the
// Application as patched and the revision. A revision not in the history, or a
// suspended Application, is refused (rollback.ErrRefused).
func Pin(ctx context.Context, c client.Client, key client.ObjectKey, to string) (*gitsyncv1.Application, string, error) {
	app, err := GetApp(ctx, c, key)
	if err != nil {
		return nil, "", err
	}
	rev, err := rollback.Target(app, to)
	if err != nil {
		return nil, "", err
	}
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.PinnedRevision = rev
	if err := c.Patch(ctx, app, base); err != nil {
		return nil, "", fmt.Errorf("pinning Application %s: %w", key, err)
	}
	return app, rev, nil
}
