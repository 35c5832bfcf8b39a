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

func init() {
	metrics.Registry.MustRegister(deliveries)
}
