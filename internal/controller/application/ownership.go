package application

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Ownership hand-off. An object moves from Application X to Application Y when one
// commit takes it out of X's path and puts it into Y's, or when X is renamed to Y
// (Y created, X deleted). Whichever syncs first, the object is relabelled in place,
// never deleted and recreated (a PVC keeps its data):
//   - Y first: the object carries X's labels, but X no longer renders it (or no longer
//     exists, or is being deleted): Y takes it over (ownerReleased). X's next prune
//     skips it, since its labels name Y.
//   - X first: X's prune (or its deletion) skips an object that an Application on the
//     same source renders now (pruneOptions); Y then finds it labelled for X, which no
//     longer lists nor renders it, and takes it over.
// An object that X still renders stays X's: Y reports the conflict and retries.

// ownerReleased returns the apply.ReleasedFunc of app: the other Application has let go
// of an object when it does not exist or is being deleted, or when it does not render
// the object at its source's current artifact (when that render cannot be made, or may
// not be: its references are refused, when its inventory does not list the object).
// One render per other Application per sync.
func (r *Reconciler) ownerReleased(app *gitsyncv1.Application) apply.ReleasedFunc {
	renders := r.renderCache()
	return func(ctx context.Context, owner types.NamespacedName, id string) (bool, error) {
		if owner == client.ObjectKeyFromObject(app) {
			return false, nil
		}
		other := &gitsyncv1.Application{}
		if err := r.APIReader.Get(ctx, owner, other); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("reading Application %s: %w", owner, err)
		}
		if !other.DeletionTimestamp.IsZero() {
			return true, nil
		}
		ids, err := renders(ctx, other)
		if err != nil {
			for _, e := range inventoryEntries(other) {
				if e.ID == id {
					return false, nil
				}
			}
			return true, nil
		}
		return !ids[id], nil
	}
}

// pruneOptions returns the prune options of app: an object that another Application of
// its namespace (on any source; suspended ones too, as they may resume) renders now is
// left for it to take over, and so is every object while another one cannot be rendered
// (it may render the object: the prune fails closed and waits). An Application whose
// references are refused renders nothing and claims nothing (it is not rendered: see
// renderCurrent). skips, when not nil, records each object so left and why.
func (r *Reconciler) pruneOptions(app *gitsyncv1.Application, skips *pruneSkips) apply.PruneOptions {
	renders := r.renderCache()
	var (
		once     sync.Once
		siblings []*gitsyncv1.Application
		listErr  error
	)
	// The namespaced kinds (discovery) are read once per prune, not per stale Namespace.
	var (
		kindsOnce sync.Once
		kinds     []schema.GroupVersionKind
		kindsErr  error
	)
	namespacedKinds := func(ctx context.Context) ([]schema.GroupVersionKind, error) {
		kindsOnce.Do(func() { kinds, kindsErr = r.namespacedKinds(ctx, r.discoveryOf(app)) })
		return kinds, kindsErr
	}
	return apply.PruneOptions{CRDs: app.Spec.PruneCRDs, NamespacedKinds: namespacedKinds, Claimed: func(ctx context.Context, id string) (bool, error) {
		once.Do(func() {
			apps := &gitsyncv1.ApplicationList{}
			if listErr = r.List(ctx, apps, client.InNamespace(app.Namespace)); listErr != nil {
				return
			}
			for i := range apps.Items {
				other := &apps.Items[i]
				if other.UID != app.UID && other.DeletionTimestamp.IsZero() {
					siblings = append(siblings, other)
				}
			}
		})
		if listErr != nil {
			return false, fmt.Errorf("listing the Applications of namespace %s: %w", app.Namespace, listErr)
		}
		// A sibling that renders the object takes it over; else the first one that
		// cannot be rendered holds it back.
		var unrendered *gitsyncv1.Application
		var renderErr error
		for _, other := range siblings {
			ids, err := renders(ctx, other)
			var refused *accessError
			if errors.As(err, &refused) {
				continue // it renders nothing: its sync stops at its access check
			}
			if err != nil {
				if unrendered == nil {
					unrendered, renderErr = other, err
				}
				continue
			}
			if ids[id] {
				skips.record(id, other.Name, nil)
				return true, nil
			}
		}
		if unrendered != nil {
			ctrl.LoggerFrom(ctx).Info("not pruning while another Application of the namespace cannot be rendered",
				"object", id, "application", unrendered.Name, "error", renderErr.Error())
			skips.record(id, unrendered.Name, renderErr)
			return true, nil
		}
		return false, nil
	}}
}

// renderCache returns a function that renders an Application at its source's current
// artifact, as its own sync would, once per Application, and returns the inventory IDs.
func (r *Reconciler) renderCache() func(context.Context, *gitsyncv1.Application) (map[string]bool, error) {
	type rendered struct {
		ids map[string]bool
		err error
	}
	var mu sync.Mutex
	cache := map[types.UID]*rendered{}
	return func(ctx context.Context, app *gitsyncv1.Application) (map[string]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := cache[app.UID]; ok {
			return c.ids, c.err
		}
		objs, err := r.renderCurrent(ctx, app)
		c := &rendered{err: err}
		if err == nil {
			c.ids = make(map[string]bool, len(objs))
			for _, o := range objs {
				c.ids[apply.EntryOf(o).ID] = true
			}
		}
		cache[app.UID] = c
		return c.ids, c.err
	}
}

// renderCurrent renders app's path at its source's current artifact, as its sync would.
// An Application whose references are refused is not rendered (an *accessError): its
// render would read another namespace's source for it.
func (r *Reconciler) renderCurrent(ctx context.Context, app *gitsyncv1.Application) ([]*unstructured.Unstructured, error) {
	if err := r.checkAccess(app); err != nil {
		return nil, err
	}
	if app.MultiSource() {
		return r.renderCurrentSources(ctx, app) // multibuild.go
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		loc, err := r.resolveChart(ctx, app)
		if err != nil {
			return nil, err
		}
		if loc.reason != "" {
			return nil, errors.New(loc.msg)
		}
		path, ok := r.Charts.CachedVersion(sourceid.ChartKey(loc.repo), loc.version)
		if !ok {
			return nil, fmt.Errorf("chart %s is not downloaded yet", loc.revision)
		}
		res, err := r.render(ctx, path, app)
		if err != nil {
			return nil, err
		}
		return res.Objects, nil
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.OCIRepositoryKind {
		dir, ok := r.ociCheckout(ctx, app, "")
		if !ok {
			return nil, fmt.Errorf("the artifact of OCIRepository %s is not in storage", sourceid.Key(app))
		}
		res, err := r.render(ctx, dir, app)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", pathOf(app), err)
		}
		return res.Objects, nil
	}
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, sourceid.Key(app), repo); err != nil {
		return nil, fmt.Errorf("reading source %s: %w", sourceid.Key(app), err)
	}
	artifact := kit.CurrentArtifact(repo)
	if artifact == nil {
		return nil, fmt.Errorf("source %s has no artifact", sourceid.Key(app))
	}
	dir := sourceid.CheckoutDir(r.Storage, repo, artifact.Commit)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("checkout of %s: %w", artifact.Revision, err)
	}
	release := r.Storage.Acquire(dir)
	defer release()
	res, err := r.render(ctx, dir, app)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", pathOf(app), err)
	}
	return res.Objects, nil
}

// namespacedKinds lists the namespaced kinds the cluster serves that can be listed, for
// the prune's check of what a Namespace holds (see apply.PruneOptions.NamespacedKinds).
func (r *Reconciler) namespacedKinds(ctx context.Context, dc discovery.DiscoveryInterface) ([]schema.GroupVersionKind, error) {
	if dc == nil {
		return nil, fmt.Errorf("no discovery client")
	}
	lists, err := discovery.ServerPreferredNamespacedResources(dc)
	if err != nil {
		return nil, fmt.Errorf("discovering namespaced kinds: %w", err)
	}
	var kinds []schema.GroupVersionKind
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue
			}
			kinds = append(kinds, gv.WithKind(res.Kind))
		}
	}
	return kinds, nil
}
