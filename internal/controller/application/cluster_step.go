package application

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
	"github.com/gitsync-dev/gitsync/internal/health"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// An Application with spec.cluster syncs to another cluster: it renders with that
// cluster's discovery, and dry-runs, applies, prunes, waits for health and deletes there
// through the Cluster's cached Target (internal/cluster), as the identity Target.User
// names. What its render reads (valuesFrom, substituteFrom, the decryption Secret) stays
// in the Application's namespace here. It is not recorded in internal/desired (whose
// watches are this cluster's): remote.go watches its objects on that cluster instead.

// remoteCluster returns the key of the Cluster app targets, and whether it targets one.
func remoteCluster(app *gitsyncv1.Application) (types.NamespacedName, bool) {
	ref := app.Spec.Cluster
	if ref == nil {
		return types.NamespacedName{}, false
	}
	ns := ref.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}, true
}

// isRemote tells whether app syncs to another cluster.
func isRemote(app *gitsyncv1.Application) bool { return app.Spec.Cluster != nil }

// refusedCluster says why app may not use the Cluster it names (another namespace
// without --allow-cross-namespace-refs), or "".
func refusedCluster(app *gitsyncv1.Application) string {
	key, ok := remoteCluster(app)
	if !ok || key.Namespace == app.Namespace {
		return ""
	}
	return fmt.Sprintf("cluster names Cluster %s in another namespace: cross-namespace references are not allowed (gitsync run --allow-cross-namespace-refs)", key)
}

// clusterWaitMax bounds the wait between looks at an unreachable Cluster (the Cluster's
// status change wakes the Application sooner).
const clusterWaitMax = 2 * time.Minute

// reconcileCluster checks the Cluster an Application targets before anything is read
// or written there. Missing, suspended or never probed: Ready=False/ClusterNotReady and
// a wait. Unreachable (its probe failed): Ready=False/ClusterUnreachable naming it,
// health Unknown (not Failed) and sync Unknown, nothing applied or pruned, a wait with
// backoff (its status change wakes the Application at once). Ready: its Target is
// looked up (a refused kubeconfig is ClusterNotReady too).
func (r *Reconciler) reconcileCluster(ctx context.Context, s *syncRun) outcome {
	key, ok := remoteCluster(s.app)
	if !ok {
		r.forgetRemote(client.ObjectKeyFromObject(s.app)) // it may have left a Cluster
		return done()
	}
	if r.Clusters == nil {
		return stalled(gitsyncv1.ClusterNotReadyReason, "this operator does not sync to other clusters")
	}
	cl := &gitsyncv1.Cluster{}
	if err := r.Get(ctx, key, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return waitFor(r.clusterWait(s), gitsyncv1.ClusterNotReadyReason, fmt.Sprintf("Cluster %s does not exist", key))
		}
		return retry(fmt.Errorf("reading Cluster %s: %w", key, err))
	}
	if cl.Spec.Suspend {
		return waitFor(0, gitsyncv1.ClusterNotReadyReason, fmt.Sprintf("Cluster %s is suspended: waiting", key))
	}
	ready := conditions.Get(cl, gitsyncv1.ReadyCondition)
	switch {
	case ready == nil || cl.Status.ObservedGeneration != cl.Generation:
		return waitFor(r.clusterWait(s), gitsyncv1.ClusterNotReadyReason, fmt.Sprintf("Cluster %s was not probed yet", key))
	case ready.Status != metav1.ConditionTrue && ready.Reason == gitsyncv1.ClusterUnreachableReason:
		return r.unreachable(s, key, errors.New(ready.Message))
	case ready.Status != metav1.ConditionTrue:
		return waitFor(r.clusterWait(s), gitsyncv1.ClusterNotReadyReason, fmt.Sprintf("Cluster %s is not ready: %s", key, ready.Message))
	}
	if _, err := r.Clusters.Get(ctx, cl); err != nil {
		return waitFor(r.clusterWait(s), gitsyncv1.ClusterNotReadyReason, fmt.Sprintf("Cluster %s: %v", key, err))
	}
	return done()
}

// unreachable is the outcome of an Application whose Cluster did not answer: nothing
// more is done there (no prune), health and sync are Unknown, Ready=False names the
// Cluster, and the Application looks again with backoff.
func (r *Reconciler) unreachable(s *syncRun, key types.NamespacedName, err error) outcome {
	app := s.app
	msg := fmt.Sprintf("Cluster %s is unreachable: %v", key, err)
	app.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusUnknown, Message: msg}
	conditions.MarkUnknown(app, gitsyncv1.HealthyCondition, gitsyncv1.ClusterUnreachableReason, "%s", msg)
	if app.Status.Sync != nil {
		app.Status.Sync.Status = gitsyncv1.SyncStatusUnknown
	}
	return waitFor(r.clusterWait(s), gitsyncv1.ClusterUnreachableReason, msg)
}

// clusterWait is how long an Application waiting for its Cluster waits before looking
// again: RetryInterval doubling with each look while the same reason holds, up to
// clusterWaitMax.
func (r *Reconciler) clusterWait(s *syncRun) time.Duration {
	n := 0
	if c := conditions.Get(s.app, gitsyncv1.ReadyCondition); c != nil &&
		(c.Reason == gitsyncv1.ClusterUnreachableReason || c.Reason == gitsyncv1.ClusterNotReadyReason) {
		n = int(r.now().Sub(c.LastTransitionTime.Time) / r.retryInterval())
		if n > 16 {
			n = 16
		}
	}
	return kit.Backoff(r.retryInterval(), clusterWaitMax, n)
}

// clusterOutcome turns a failure of a remote Application's step that says its cluster
// did not answer into the unreachable outcome (a wait, not a failed revision: nothing
// was pruned, health is Unknown). Other outcomes pass.
func (r *Reconciler) clusterOutcome(s *syncRun, out outcome) outcome {
	key, ok := remoteCluster(s.app)
	if !ok || out.kind != stepRetry || out.err == nil {
		return out
	}
	if cluster.Unreachable(out.err) {
		return r.unreachable(s, key, out.err)
	}
	// Not every client wraps a failed dial (discovery does not): ask /version once.
	ctx, cancel := context.WithTimeout(context.Background(), cluster.ProbeTimeout)
	defer cancel()
	t, err := r.targetOf(ctx, s.app)
	if err != nil {
		return out
	}
	if _, err := cluster.Probe(ctx, t); err != nil && cluster.Unreachable(err) {
		return r.unreachable(s, key, err)
	}
	return out
}

// targetOf returns the Target of the Cluster app names.
func (r *Reconciler) targetOf(ctx context.Context, app *gitsyncv1.Application) (*cluster.Target, error) {
	key, _ := remoteCluster(app)
	if r.Clusters == nil {
		return nil, fmt.Errorf("this operator does not sync to other clusters")
	}
	if msg := refusedCluster(app); msg != "" && !r.AllowCrossNamespaceRefs {
		return nil, &accessError{msg: msg}
	}
	cl := &gitsyncv1.Cluster{}
	if err := r.Get(ctx, key, cl); err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", key, err)
	}
	return r.Clusters.Get(ctx, cl)
}

// targetTimeout bounds the read of a kubeconfig Secret when a Target is made outside
// a step (the Applier has no context).
const targetTimeout = 30 * time.Second

// clusterApplier makes the Applier of the Reconciler: local's for an Application on
// this cluster, a manager over its Cluster's client (as Target.User) otherwise.
func (r *Reconciler) clusterApplier(local func(*gitsyncv1.Application) (*apply.Manager, error)) func(*gitsyncv1.Application) (*apply.Manager, error) {
	return func(app *gitsyncv1.Application) (*apply.Manager, error) {
		if !isRemote(app) {
			return local(app)
		}
		ctx, cancel := context.WithTimeout(context.Background(), targetTimeout)
		defer cancel()
		t, err := r.targetOf(ctx, app)
		if err != nil {
			return nil, err
		}
		c, err := t.Client(t.User(app.Namespace, app.Spec.ServiceAccountName))
		if err != nil {
			return nil, err
		}
		m := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
		judge, _ := health.For(app) // a compile error stalls the revision in planSync
		m.SetJudge(judge)
		return m, nil
	}
}

// remoteIdentity is status.serviceAccount of a remote Application: the user its
// Target impersonates there, or the kubeconfig's user.
func remoteIdentity(t *cluster.Target, app *gitsyncv1.Application) string {
	key, _ := remoteCluster(app)
	if u := t.User(app.Namespace, app.Spec.ServiceAccountName); u != "" {
		return u + " on Cluster " + key.String()
	}
	return "the kubeconfig's user of Cluster " + key.String()
}

// onCluster points a remote Application's render at its cluster: kinds' scopes from that
// cluster's RESTMapper, capabilities from its discovery, Helm's lookup served there as
// its identity. valuesFrom and the other references stay read here.
func (r *Reconciler) onCluster(app *gitsyncv1.Application, c *render.Cluster) {
	if !isRemote(app) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), targetTimeout)
	defer cancel()
	t, err := r.targetOf(ctx, app)
	if err != nil {
		c.IsNamespaced = func(schema.GroupKind) (bool, error) { return false, err }
		c.Discovery, c.Lookup = nil, nil
		return
	}
	c.IsNamespaced = render.ScopeFrom(t.Mapper)
	c.Discovery = t.Discovery
	c.Lookup = (&render.LookupClients{}).Provider(t.Config, t.Mapper, t.User(app.Namespace, app.Spec.ServiceAccountName))
}

// discoveryOf is the discovery of the cluster app syncs to.
func (r *Reconciler) discoveryOf(app *gitsyncv1.Application) discovery.DiscoveryInterface {
	if !isRemote(app) {
		return r.Discovery
	}
	ctx, cancel := context.WithTimeout(context.Background(), targetTimeout)
	defer cancel()
	t, err := r.targetOf(ctx, app)
	if err != nil {
		return nil
	}
	return t.Discovery
}

// clusterIndex indexes Applications by the Cluster they target ("namespace/name").
const clusterIndex = ".spec.cluster"

func clusterIndexKeys(o client.Object) []string {
	key, ok := remoteCluster(o.(*gitsyncv1.Application))
	if !ok {
		return nil
	}
	return []string{key.String()}
}
