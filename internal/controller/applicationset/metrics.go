package applicationset

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	generatedApplications = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitsync_applicationset_applications",
		Help: "Applications an ApplicationSet generates.",
	}, []string{"namespace", "name"})

	rolloutStep = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitsync_applicationset_rollout_step",
		Help: "The step (0-based; the number of steps when complete) an ApplicationSet's rollout is at.",
	}, []string{"namespace", "name"})

	rolloutEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_applicationset_rollout_events_total",
		Help: "Rollout events by reason (RolloutStepStarted, RolloutStepCompleted, RolloutHalted, RolloutCompleted, RolloutResumed).",
	}, []string{"reason"})

	appliesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitsync_applicationset_applies_total",
		Help: "Server-side applies of generated Applications (unchanged ones are skipped).",
	})

	deletesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitsync_applicationset_deletes_total",
		Help: "Generated Applications deleted because their parameter set went away.",
	})
)

func init() {
	metrics.Registry.MustRegister(generatedApplications, rolloutStep, rolloutEvents, appliesTotal, deletesTotal)
}
