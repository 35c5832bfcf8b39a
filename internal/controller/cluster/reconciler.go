// Package cluster reconciles Clusters: it probes each one's API server (/version) with
// its kubeconfig, records Ready, kubernetesVersion and lastProbeTime, backs off while it
// is unreachable, emits an event when reachability changes, and keeps the metric
// gitsync_cluster_ready.
package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// Reconciler probes Clusters.
type Reconciler struct {
	client.Client
	// Clients is the cache of remote clients, shared with the Application controller
	// (the operator makes one): a probe that finds the kubeconfig Secret changed replaces
	// the Target, a deleted Cluster drops it.
	Clients  *cluster.Clients
	Recorder recorder.EventRecorder
	// Interval is how often a reachable Cluster is probed (1m when zero).
	Interval time.Duration
	// RetryBase and RetryMax bound the backoff while a Cluster is unreachable (5s and
	// 5m when zero): base × 2^failures.
	RetryBase, RetryMax time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.Mutex
	failures map[types.NamespacedName]int
}

// +kubebuilder:rbac:groups=gitsync.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=gitsync.dev,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

var clusterOwnedConditions = []string{gitsyncv1.ReadyCondition}

// Reconcile probes one Cluster; status is written once, by the deferred patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	cl := &gitsyncv1.Cluster{}
	if err := r.Get(ctx, req.NamespacedName, cl); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cl.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	patcher := kit.NewStatusPatcher(cl, r.Client)
	wasReady := conditions.Get(cl, gitsyncv1.ReadyCondition)
	defer func() {
		retErr = errors.Join(retErr, kit.PatchStatus(ctx, patcher, cl, clusterOwnedConditions, true))
	}()
	if cl.Spec.Suspend {
		r.Clients.Drop(req.NamespacedName)
		conditions.MarkUnknown(cl, gitsyncv1.ReadyCondition, gitsyncv1.SuspendedReason, "the Cluster is suspended: not probed")
		readyGauge.WithLabelValues(cl.Namespace, cl.Name).Set(0)
		return ctrl.Result{}, nil
	}
	return r.reconcileProbe(ctx, cl, wasReady), nil
}

// reconcileProbe reads the kubeconfig (replacing the cached Target when the Secret or
// the Cluster changed) and asks /version. Ready=True/ClusterReachable with
// kubernetesVersion; Ready=False/KubeConfigInvalid for a refused or missing kubeconfig
// (looked at again at the interval; a Secret change is seen then); Ready=False/
// AccessDenied when, in tenant mode, the namespace's account may not get the kubeconfig
// Secret (it is not read; looked at again at the interval); Ready=False/
// ClusterUnreachable when the server does not answer, and again sooner with backoff.
func (r *Reconciler) reconcileProbe(ctx context.Context, cl *gitsyncv1.Cluster, was *metav1.Condition) ctrl.Result {
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	now := metav1.NewTime(r.now())
	cl.Status.LastProbeTime = &now
	target, err := r.Clients.Refresh(ctx, cl)
	var version string
	if err == nil {
		version, err = cluster.Probe(ctx, target)
	}
	reason := gitsyncv1.ClusterReachableReason
	var kcErr *cluster.KubeConfigError
	var denied *cluster.AccessError
	switch {
	case err == nil:
		r.reset(key)
		cl.Status.KubernetesVersion = version
		conditions.MarkTrue(cl, gitsyncv1.ReadyCondition, reason, "the API server answered: Kubernetes %s", version)
	case errors.As(err, &denied):
		reason = gitsyncv1.AccessDeniedReason
		conditions.MarkFalse(cl, gitsyncv1.ReadyCondition, reason, "%s", err)
	case errors.As(err, &kcErr):
		reason = gitsyncv1.KubeConfigInvalidReason
		conditions.MarkFalse(cl, gitsyncv1.ReadyCondition, reason, "%s", err)
	default:
		reason = gitsyncv1.ClusterUnreachableReason
		conditions.MarkFalse(cl, gitsyncv1.ReadyCondition, reason, "%s", err)
	}
	r.recordChange(cl, was, reason)
	if err == nil {
		readyGauge.WithLabelValues(cl.Namespace, cl.Name).Set(1)
		return ctrl.Result{RequeueAfter: r.interval()}
	}
	readyGauge.WithLabelValues(cl.Namespace, cl.Name).Set(0)
	ctrl.LoggerFrom(ctx).Info("cluster not ready", "reason", reason, "error", err.Error())
	if reason == gitsyncv1.KubeConfigInvalidReason || reason == gitsyncv1.AccessDeniedReason {
		return ctrl.Result{RequeueAfter: r.interval()}
	}
	return ctrl.Result{RequeueAfter: r.backoff(key)}
}

// recordChange emits an event when Ready changed reason (reachable ↔ unreachable ↔
// refused): Normal when it became reachable, Warning otherwise. The event goes to the
// notifications as every controller's do (Alert eventSources kind Cluster).
func (r *Reconciler) recordChange(cl *gitsyncv1.Cluster, was *metav1.Condition, reason string) {
	if r.Recorder == nil || (was != nil && was.Reason == reason) {
		return
	}
	msg := conditions.GetMessage(cl, gitsyncv1.ReadyCondition)
	if reason == gitsyncv1.ClusterReachableReason {
		if was == nil || was.Status == metav1.ConditionTrue {
			r.Recorder.Eventf(cl, nil, corev1.EventTypeNormal, reason, "Probe", "%s", msg)
			return
		}
		r.Recorder.Eventf(cl, nil, corev1.EventTypeNormal, reason, "Probe", "reachable again: %s", msg)
		return
	}
	r.Recorder.Eventf(cl, nil, corev1.EventTypeWarning, reason, "Probe", "%s", msg)
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.Clients.Drop(key)
	r.reset(key)
	readyGauge.DeleteLabelValues(key.Namespace, key.Name)
}

func (r *Reconciler) reset(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, key)
}

// backoff counts a failed probe and returns when to probe again.
func (r *Reconciler) backoff(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[types.NamespacedName]int{}
	}
	n := r.failures[key]
	r.failures[key] = n + 1
	base, max := r.RetryBase, r.RetryMax
	if base <= 0 {
		base = 5 * time.Second
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	return kit.Backoff(base, max, n)
}

func (r *Reconciler) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return time.Minute
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
