package application

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// reconcileSelective serves a selective sync (gitsync.dev/sync-resources: `gitsync sync
// app NAME --resource …`): the whole revision is dry-run first (nothing is applied if any
// object is refused), then only the selected objects are applied — no hooks, no waves,
// no prune. The drift controller then holds the selected objects at the new revision and
// the others at the revision applied before; the Application stays OutOfSync at the new
// revision (Ready=False, PartiallySynced) until a full sync, and status.selectiveSync
// names what was applied. A selector that matches no object refuses the request.
func (r *Reconciler) reconcileSelective(ctx context.Context, s *syncRun, selectors []gitsyncv1.ResourceSelector) outcome {
	app := s.app
	selected, missing := selectObjects(s.objects, selectors)
	s.applyTried = true // the request is used up, whatever comes of it
	if len(missing) > 0 {
		return stalled(gitsyncv1.ApplyFailedReason, fmt.Sprintf("selective sync of revision %s: %s match(es) no object of the revision",
			s.revision, strings.Join(missing, ", ")))
	}
	manager, err := r.Applier(app)
	if err != nil {
		return revisionRetry(gitsyncv1.ApplyFailedReason, err)
	}
	s.manager = manager
	opts := apply.Options{Force: app.Spec.Force, Previous: s.previous, OwnerReleased: r.ownerReleased(app),
		Ignore: func(o *unstructured.Unstructured) []string { return app.IgnorePointers(o) }}
	ctx, cancel := context.WithTimeout(ctx, r.timeout(app))
	defer cancel()
	if err := manager.DryRun(ctx, s.objects, opts); err != nil {
		return revisionRetry(gitsyncv1.ApplyFailedReason, fmt.Errorf("selective sync: dry-run of revision %s: %w", s.revision, err))
	}
	result, err := r.applySelected(ctx, s, selected, opts)
	if result != nil {
		setInventory(app, union(s.previous, result.Inventory))
	}
	if err != nil {
		return revisionRetry(gitsyncv1.ApplyFailedReason, fmt.Errorf("selective sync of revision %s: %w", s.revision, err))
	}
	names := make([]string, len(selected))
	for i, o := range selected {
		names[i] = apply.Subject(o)
	}
	app.Status.SelectiveSync = &gitsyncv1.SelectiveSyncStatus{Revision: s.revision, Objects: names, SyncedAt: metav1.NewTime(r.now())}
	app.Status.Sync = &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: s.revision, Chart: s.chart, ChartVersion: s.chartVersion}
	msg := fmt.Sprintf("selective sync applied %d of %d object(s) of revision %s (%s); the rest waits for a full sync",
		len(selected), len(s.objects), s.revision, strings.Join(names, ", "))
	r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Applied", "Sync", "revision %s (selective)\n%s", s.revision, changeSummary(result.Changes, nil))
	s.log.Info("selective sync", "revision", s.revision, "objects", len(selected))
	return waitFor(r.requeueAfter(s), gitsyncv1.PartiallySyncedReason, msg)
}

// applySelected applies the selected objects under the Application's drift lock and
// makes the drift controller's desired state the one it held with these objects
// replaced (or added): the objects not selected keep being held at the revision applied
// before.
func (r *Reconciler) applySelected(ctx context.Context, s *syncRun, selected []*unstructured.Unstructured, opts apply.Options) (*apply.Result, error) {
	if r.Desired == nil {
		return s.manager.Apply(ctx, selected, opts)
	}
	key := client.ObjectKeyFromObject(s.app)
	if s.lock.unlock == nil {
		s.lock.unlock = r.Desired.Lock(key)
	}
	before, tracked := r.Desired.Objects(key)
	result, err := s.manager.Apply(ctx, selected, opts)
	if err != nil || !tracked {
		return result, err
	}
	if err := r.Desired.Applied(ctx, key, replaceObjects(before, selected)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "starting drift watches")
	}
	return result, nil
}

// selectObjects returns the objects the selectors name, in render order, and the
// selectors that name none.
func selectObjects(objs []*unstructured.Unstructured, selectors []gitsyncv1.ResourceSelector) (selected []*unstructured.Unstructured, missing []string) {
	used := make([]bool, len(selectors))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		hit := false
		for i, sel := range selectors {
			if sel.Matches(gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()) {
				used[i], hit = true, true
			}
		}
		if hit {
			selected = append(selected, o)
		}
	}
	for i, sel := range selectors {
		if !used[i] {
			missing = append(missing, sel.String())
		}
	}
	return selected, missing
}

// replaceObjects returns before with the objects of with in place of those of the same
// identity, and the others of with added.
func replaceObjects(before, with []*unstructured.Unstructured) []*unstructured.Unstructured {
	byID := make(map[string]*unstructured.Unstructured, len(with))
	for _, o := range with {
		byID[apply.EntryOf(o).ID] = o
	}
	out := make([]*unstructured.Unstructured, 0, len(before)+len(with))
	for _, o := range before {
		id := apply.EntryOf(o).ID
		if n, ok := byID[id]; ok {
			out = append(out, n)
			delete(byID, id)
			continue
		}
		out = append(out, o)
	}
	for _, o := range with {
		if _, ok := byID[apply.EntryOf(o).ID]; ok {
			out = append(out, o)
		}
	}
	return out
}
