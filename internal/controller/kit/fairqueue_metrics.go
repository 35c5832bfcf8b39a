package kit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// queueMetrics are the workqueue metrics a controller's queue reports (workqueue_depth,
// _adds_total, _retries_total, _queue_duration_seconds, _work_duration_seconds), in the
// series controller-runtime's priority queue writes, so that dashboards and alerts on
// them keep working with the fair queue. controller-runtime registers those collectors
// in an internal package; registering their twins hands back the registered ones.
type queueMetrics struct {
	depth          prometheus.Gauge
	adds, retries  prometheus.Counter
	latency, works prometheus.Observer
}

func newQueueMetrics(name string) queueMetrics {
	return queueMetrics{
		depth: registered(prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue by workqueue and priority"}, []string{"name", "controller", "priority"})).
			WithLabelValues(name, name, ""),
		adds: registered(prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue"}, []string{"name", "controller"})).
			WithLabelValues(name, name),
		retries: registered(prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"},
			[]string{"name", "controller"})).WithLabelValues(name, name),
		latency: registered(prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested",
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)}, []string{"name", "controller"})).
			WithLabelValues(name, name),
		works: registered(prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)}, []string{"name", "controller"})).
			WithLabelValues(name, name),
	}
}

// registered registers c in controller-runtime's registry and returns it, or the
// collector registered there before under the same description.
func registered[C prometheus.Collector](c C) C {
	err := metrics.Registry.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}
