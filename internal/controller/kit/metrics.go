package kit

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	FetchesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_source_polls_total",
		Help: "Polls of Git repositories by result: fetched (a new commit), unchanged (ref listing only), failed.",
	}, []string{"result"})

	SyncsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_application_syncs_total",
		Help: "Application syncs recorded in history, by result (Succeeded, Failed).",
	}, []string{"result"})

	ApplyChangesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_application_changes_total",
		Help: "Objects written by Application syncs, by action (created, configured, deleted).",
	}, []string{"action"})

	DriftDetectedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitsync_drift_detected_total",
		Help: "Managed objects found to differ from Git (each new drift of an object counts once).",
	})

	DriftCorrectedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitsync_drift_corrected_total",
		Help: "Drifted objects re-applied from Git by self-heal.",
	})

	DriftCorrectionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gitsync_drift_correction_seconds",
		Help:    "Time from a drift's detection to its correction.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
	})

	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitsync_reconcile_duration_seconds",
		Help:    "Duration of reconciliations by kind.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(FetchesTotal, SyncsTotal, ApplyChangesTotal, DriftDetectedTotal, DriftCorrectedTotal,
		DriftCorrectionSeconds, ReconcileDuration)
}
