package operator

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client-side rate limit of the operator's requests (all its clients together), the
// defaults of `gitsync run --kube-api-qps/--kube-api-burst`. Measured on 2 cores
// (bench/BenchmarkScale, 40 Applications × 20 ConfigMaps): without a limit a cold start
// sends about 620 requests per second; a limit of 500 made it 20% slower, and a push
// during it waited 2.8 s instead of 0.3 s behind the backlog's requests (one bucket for
// all). 1000 does not slow a start on such a machine, keeps 1,000 Applications × 20
// objects (some 48,000 requests) within a minute, and still bounds a runaway loop.
// (Flux's defaults, 50 and 300, would make that start take a quarter of an hour.)
const (
	DefaultKubeAPIQPS   = 1000
	DefaultKubeAPIBurst = 2000
)

// withRateLimit returns a copy of cfg whose clients share one token bucket of qps
// requests per second (burst at once): client-go would otherwise give each client (one
// per resource kind in controller-runtime) a bucket of its own. Zero values take the
// defaults; a negative qps turns the client-side limit off (the API server's priority
// and fairness still applies).
func withRateLimit(cfg *rest.Config, qps float32, burst int) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if qps == 0 {
		qps = DefaultKubeAPIQPS
	}
	if burst <= 0 {
		burst = DefaultKubeAPIBurst
	}
	if qps < 0 {
		cfg.QPS, cfg.RateLimiter = -1, nil
		return cfg
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	return cfg
}
