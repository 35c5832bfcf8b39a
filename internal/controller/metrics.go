package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	fetchesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_source_polls_total",
		Help: "Polls of Git repositories by result: fetched (a new commit), unchanged (ref listing only), failed.",
	}, []string{"result"})

	syncsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_application_syncs_total",
		Help: "Application syncs recorded in history, by result (Succeeded, Failed).",
	}, []string{"result"})

	applyChangesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_application_changes_total",
		Help: "Objects written by Application syncs, by action (created, configured, deleted).",
	}, []string{"action"})

	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitsync_reconcile_duration_seconds",
		Help:    "Duration of reconciliations by kind.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(fetchesTotal, syncsTotal, applyChangesTotal, reconcileDuration)
}
