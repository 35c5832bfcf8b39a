package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// requestsTotal counts deliveries by provider (github, gitlab, gitea,
// bitbucket, generic; "unknown" for paths that name none, so that callers
// cannot grow the label set) and HTTP status code.
var requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gitsync_webhook_requests_total",
	Help: "Webhook deliveries received, by provider and HTTP status code.",
}, []string{"provider", "code"})

func init() {
	metrics.Registry.MustRegister(requestsTotal)
}
