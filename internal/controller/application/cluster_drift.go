package application

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/syncwindow"
)

// Drift on another cluster: the same metadata-only, label-selected watches as here
// (drift.Watches), one set per Cluster over its Target, with the kinds of the
// Applications synced there. A change by another writer (or a deletion) marks the
// Application drifted, naming the writer, and wakes it: with selfHeal it syncs again
// (the whole revision, sent to that cluster: unchanged objects are no-ops for
// server-side apply), without it the drift is reported (Ready=False/DriftDetected). A
// settled remote Application whose objects are watched makes no request at its resync.

// remoteDrift holds the watches of every Cluster with synced Applications.
type remoteDrift struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterWatches
	// wake carries the drifted Applications to the controller's queue.
	wake chan event.GenericEvent
}

// clusterWatches are the watches of one Cluster.
type clusterWatches struct {
	target  *cluster.Target
	watches *drift.Watches
	// kinds are the watched kinds of each Application on the cluster.
	kinds map[types.NamespacedName][]schema.GroupVersionKind
	// drifted holds, per Application, its objects changed by others since its last
	// sync, with the writer.
	drifted map[types.NamespacedName]map[string]driftSeen
	// corrections holds, per Application, when its recent drift corrections began.
	corrections map[types.NamespacedName][]time.Time
}

// hotLoop bounds the corrections of one Application's drift on another cluster: more
// than hotLoopCorrections within hotLoopWindow is a fight (another controller writing
// back) or writes too frequent to follow, and the next correction waits for the window
// to pass (DESIGN.md "Fights"; a person's occasional edits are each reverted at once).
const (
	hotLoopCorrections = 10
	hotLoopWindow      = 10 * time.Second
)

// correcting records a correction of app's drift starting at now and returns how long
// it must wait first (0: none).
func (d *remoteDrift) correcting(key, app types.NamespacedName, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	cw := d.clusters[key]
	if cw == nil {
		return 0
	}
	recent := cw.corrections[app][:0:0]
	for _, at := range cw.corrections[app] {
		if now.Sub(at) < hotLoopWindow {
			recent = append(recent, at)
		}
	}
	if len(recent) >= hotLoopCorrections {
		cw.corrections[app] = recent
		return hotLoopWindow - now.Sub(recent[0])
	}
	cw.corrections[app] = append(recent, now)
	return 0
}

// driftSeen is one remote object changed by someone else.
type driftSeen struct {
	writer string
	at     time.Time
	gone   bool
}

func newRemoteDrift() *remoteDrift {
	return &remoteDrift{clusters: map[types.NamespacedName]*clusterWatches{}, wake: make(chan event.GenericEvent, 1024)}
}

// applied records that app's objects (of kinds) were just applied to the Cluster of
// t: its kinds are watched there from now on, and what was seen drifted is forgotten.
func (d *remoteDrift) applied(ctx context.Context, t *cluster.Target, app types.NamespacedName, kinds []schema.GroupVersionKind) error {
	d.mu.Lock()
	d.dropElsewhere(t.Key, app)
	cw := d.clusters[t.Key]
	if cw != nil && cw.target != t { // a new kubeconfig or Cluster spec: watch through it
		cw.watches.Stop()
		cw.watches, cw.target = d.newWatches(t), t
	}
	if cw == nil {
		cw = &clusterWatches{target: t, watches: d.newWatches(t),
			kinds: map[types.NamespacedName][]schema.GroupVersionKind{}, drifted: map[types.NamespacedName]map[string]driftSeen{},
			corrections: map[types.NamespacedName][]time.Time{}}
		d.clusters[t.Key] = cw
	}
	cw.kinds[app] = kinds
	delete(cw.drifted, app)
	want := cw.wanted()
	w := cw.watches
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, prepareRemoteTimeout)
	defer cancel()
	return w.Sync(ctx, want)
}

// prepareRemoteTimeout bounds the wait for a remote watch's first list.
const prepareRemoteTimeout = 30 * time.Second

func (d *remoteDrift) newWatches(t *cluster.Target) *drift.Watches {
	key := t.Key
	return drift.NewWatches(t.Metadata, func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
		m, err := t.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return schema.GroupVersionResource{}, err
		}
		return m.Resource, nil
	}, func(e drift.Event) { d.seen(key, e) })
}

// seen marks the owner of a changed remote object drifted and wakes it.
func (d *remoteDrift) seen(key types.NamespacedName, e drift.Event) {
	d.mu.Lock()
	cw := d.clusters[key]
	if cw == nil {
		d.mu.Unlock()
		return
	}
	if _, ok := cw.kinds[e.Owner]; !ok { // not an Application of this operator on that cluster
		d.mu.Unlock()
		return
	}
	seen := driftSeen{at: time.Now(), gone: e.Gone}
	if m, ok := cw.watches.Cached(e.Object); ok && !e.Gone {
		seen.writer = lastWriter(m.GetManagedFields())
	}
	if cw.drifted[e.Owner] == nil {
		cw.drifted[e.Owner] = map[string]driftSeen{}
	}
	cw.drifted[e.Owner][subjectOf(e.Object)] = seen
	d.mu.Unlock()
	select {
	case d.wake <- event.GenericEvent{Object: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: e.Owner.Name, Namespace: e.Owner.Namespace}}}:
	default: // the queue is far behind: the drift stays marked for the next look
	}
}

// lastWriter is the field manager other than gitsync that wrote last.
func lastWriter(entries []metav1.ManagedFieldsEntry) string {
	var writer string
	var when time.Time
	for _, e := range entries {
		if e.Manager == gitsyncv1.FieldManager || e.Subresource == "status" {
			continue
		}
		if e.Time != nil && !e.Time.Time.Before(when) {
			writer, when = e.Manager, e.Time.Time
		} else if writer == "" {
			writer = e.Manager
		}
	}
	return writer
}

func subjectOf(ref drift.ObjectRef) string {
	if ref.Namespace == "" {
		return ref.GVK.Kind + "/" + ref.Name
	}
	return ref.GVK.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// stopAll stops the watches of every Cluster (the operator stops).
func (d *remoteDrift) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, cw := range d.clusters {
		cw.watches.Stop()
		delete(d.clusters, key)
	}
}

// forget stops watching for app (deleted, suspended, or moved to another cluster).
func (d *remoteDrift) forget(app types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropElsewhere(types.NamespacedName{}, app)
}

// dropElsewhere removes app from every Cluster's watches but keep's; d.mu is held.
func (d *remoteDrift) dropElsewhere(keep types.NamespacedName, app types.NamespacedName) {
	for key, cw := range d.clusters {
		if key == keep {
			continue
		}
		if _, ok := cw.kinds[app]; !ok {
			continue
		}
		delete(cw.kinds, app)
		delete(cw.drifted, app)
		delete(cw.corrections, app)
		if len(cw.kinds) == 0 {
			cw.watches.Stop()
			delete(d.clusters, key)
			continue
		}
		want := cw.wanted()
		go func() { _ = cw.watches.Sync(context.Background(), want) }() // stops only: no wait
	}
}

// wanted is the union of the Applications' kinds.
func (cw *clusterWatches) wanted() map[schema.GroupVersionKind]bool {
	want := map[schema.GroupVersionKind]bool{}
	for _, kinds := range cw.kinds {
		for _, gvk := range kinds {
			want[gvk] = true
		}
	}
	return want
}

// state tells whether app's objects are watched on the Cluster key, and what was seen
// drifted there since its last sync.
func (d *remoteDrift) state(key, app types.NamespacedName) (watched bool, drifted map[string]driftSeen) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cw := d.clusters[key]
	if cw == nil {
		return false, nil
	}
	_, watched = cw.kinds[app]
	return watched, maps.Clone(cw.drifted[app])
}

// forgetRemote stops watching app's objects on other clusters.
func (r *Reconciler) forgetRemote(app types.NamespacedName) {
	if r.remote != nil {
		r.remote.forget(app)
	}
}

// clustersWatched is the number of Clusters with watches (for the benchmark).
func (d *remoteDrift) clustersWatched() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.clusters)
}

// applyRemote applies a remote Application's plan and then watches its kinds on that
// cluster (the drift watches of this cluster, internal/desired, are not involved).
func (r *Reconciler) applyRemote(ctx context.Context, s *syncRun, opts apply.Options) (*apply.Result, error) {
	result, err := r.applyPlan(ctx, s, s.manager, opts)
	if err != nil || s.waiting {
		return result, err
	}
	t, terr := r.targetOf(ctx, s.app)
	if terr != nil {
		return result, nil
	}
	var kinds []schema.GroupVersionKind
	for _, o := range s.chartCRDs.Watched(s.objects) {
		if gvk := o.GroupVersionKind(); !slices.Contains(kinds, gvk) {
			kinds = append(kinds, gvk)
		}
	}
	if err := r.remote.applied(ctx, t, client.ObjectKeyFromObject(s.app), kinds); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "starting drift watches on the cluster", "cluster", t.Key.String())
	}
	return result, nil
}

// reconcileRemoteDrift ends a remote Application's routine resync early, as
// reconcileBackstop does here: settled, its objects watched on its cluster, and nothing
// seen drifted there, nothing is sent. Drift seen with selfHeal: the sync goes on (and
// an event names the objects and writers). Without selfHeal: Ready=False/DriftDetected
// and status.drift name them, nothing is written.
func (r *Reconciler) reconcileRemoteDrift(ctx context.Context, s *syncRun) outcome {
	app := s.app
	key, ok := remoteCluster(app)
	if !ok || r.remote == nil {
		return done()
	}
	appKey := client.ObjectKeyFromObject(app)
	if r.refsChanged.take(appKey) { // for reconcileBackstop and the build to see too
		r.refsChanged.mark(appKey)
		return done()
	}
	if r.heldPrunes.take(appKey) { // a prune held back: a full sync tries again
		r.heldPrunes.mark(appKey)
		return done()
	}
	watched, drifted := r.remote.state(key, appKey)
	if !watched || !settled(app, s.revision) {
		return done()
	}
	if len(drifted) == 0 {
		if app.Status.Health != nil && app.Status.Health.Status != gitsyncv1.HealthStatusHealthy {
			manager, err := r.Applier(app)
			if err != nil {
				return retry(err)
			}
			s.manager = manager
			r.recordHealth(ctx, s)
		}
		return waitFor(r.requeueAfter(s), "", "")
	}
	subjects := make([]string, 0, len(drifted))
	for subject := range drifted {
		subjects = append(subjects, subject)
	}
	sort.Strings(subjects)
	var lines []string
	for _, subject := range subjects {
		seen := drifted[subject]
		switch {
		case seen.gone:
			lines = append(lines, subject+" deleted")
		case seen.writer != "":
			lines = append(lines, subject+" changed by "+seen.writer)
		default:
			lines = append(lines, subject+" changed")
		}
	}
	summary := fmt.Sprintf("on Cluster %s: %s", key, strings.Join(lines, ", "))
	heal, until := syncwindow.SelfHeal(app.Spec.SyncWindows, r.now())
	off, requeue := "selfHeal is off", r.requeueAfter(s)
	if !heal {
		off = "a sync window says selfHeal: false"
		if !until.IsZero() {
			requeue = min(requeue, until.Sub(r.now())+time.Second)
		}
	}
	if heal && (app.Spec.SelfHeal == nil || *app.Spec.SelfHeal) {
		if wait := r.remote.correcting(key, appKey, r.now()); wait > 0 {
			msg := fmt.Sprintf("drift %s corrected %d times in %s: backing off for %s", summary, hotLoopCorrections, hotLoopWindow, wait.Round(time.Second))
			if conditions.GetReason(app, gitsyncv1.ReadyCondition) != gitsyncv1.DriftDetectedReason {
				r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.DriftDetectedReason, "Drift", "%s", msg)
			}
			return waitFor(wait, gitsyncv1.DriftDetectedReason, msg)
		}
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "DriftCorrected", "Sync", "correcting drift %s", summary)
		return done()
	}
	app.Status.Drift = nil
	for _, subject := range subjects {
		seen := drifted[subject]
		entry := gitsyncv1.DriftedObject{Object: subject, DetectedAt: metav1.NewTime(seen.at)}
		if seen.writer != "" {
			entry.Managers = []string{seen.writer}
		}
		app.Status.Drift = append(app.Status.Drift, entry)
	}
	if conditions.GetReason(app, gitsyncv1.ReadyCondition) != gitsyncv1.DriftDetectedReason {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, gitsyncv1.DriftDetectedReason, "Drift", "drift %s (%s)", summary, off)
	}
	return waitFor(requeue, gitsyncv1.DriftDetectedReason, "drift "+summary+" ("+off+")")
}
