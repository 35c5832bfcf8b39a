package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// readyGauge is gitsync_cluster_ready: 1 while the Cluster's API server answers.
var readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gitsync_cluster_ready",
	Help: "1 when the Cluster's API server answered the last probe with its credentials, 0 otherwise.",
}, []string{"namespace", "name"})

func init() { metrics.Registry.MustRegister(readyGauge) }

// SetupWithManager registers the reconciler: a Cluster is probed when created, when its
// spec changes or a probe is requested (gitsync.dev/requested-at), and then at the
// interval (with backoff while unreachable).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts kit.Options) error {
	if r.Recorder == nil {
		r.Recorder = kit.EventRecorder(mgr)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&gitsyncv1.Cluster{}, builder.WithPredicates(kit.NotRequested(), predicate.GenerationChangedPredicate{}))
	b = kit.RequestedNow(b, &gitsyncv1.Cluster{})
	_, err := opts.Build(b, r)
	return err
}
