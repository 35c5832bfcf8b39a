package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of the deliveries metric.
const (
	resultDelivered    = "delivered"
	resultFailed       = "failed"
	resultDropped      = "dropped"
	resultDeduplicated = "deduplicated"
)

var deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gitsync_notification_deliveries_total",
	Help: "Notifications by provider type and result: delivered, failed (after retries), dropped (queue full), deduplicated.",
}, []string{"type", "result"})

// events counts the events the reconcilers record, by kind, type and reason (reasons are
// constants, so the label set stays small): e.g. DriftFight, BuildFailed.
var events = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gitsync_events_total",
	Help: "Events recorded by gitsync's reconcilers, by object kind, type (Normal, Warning) and reason.",
}, []string{"kind", "type", "reason"})

func init() {
	metrics.Registry.MustRegister(deliveries, events)
}
