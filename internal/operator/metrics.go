package operator

import (
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitsync-dev/gitsync/internal/monitoring"
)

// MetricsReaderRole is the ClusterRole (config/monitoring/metrics_reader_role.yaml) whose
// holders may GET /metrics from an operator serving it securely: bind it to Prometheus's
// service account.
const MetricsReaderRole = "gitsync-metrics-reader"

// MetricsServing says how /metrics is served (gitsync run --metrics-secure,
// --metrics-cert-dir).
type MetricsServing struct {
	// Secure serves /metrics over HTTPS to callers the API server authenticates (a
	// bearer token, checked by TokenReview) and authorizes (SubjectAccessReview: get on
	// the non-resource URL /metrics, e.g. through MetricsReaderRole); others get 401 or
	// 403. Plain HTTP to anyone when false.
	Secure bool
	// CertDir holds tls.crt and tls.key for Secure; empty: a self-signed certificate is
	// made at start (scrape with insecureSkipVerify, as kubebuilder's ServiceMonitor does).
	CertDir string
}

// ServerOptions are the controller-runtime options of the metrics server on bindAddress
// ("0" turns it off).
func (m MetricsServing) ServerOptions(bindAddress string) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: bindAddress}
	if m.Secure {
		opts.SecureServing = true
		opts.CertDir = m.CertDir
		opts.FilterProvider = monitoring.ScrapeFilter
	}
	return opts
}
