package operator

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// A kubeconfig loaded the way `gitsync run --kubeconfig` loads it sets no QPS, which
// client-go would turn into 5 requests per second per client (an apply of 300 objects
// then takes two minutes). The operator sets its own limit instead: one token bucket
// shared by all its clients, --kube-api-qps/--kube-api-burst or their defaults, or none
// with a negative QPS.
func TestNewSetsOneClientRateLimit(t *testing.T) {
	data, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	fromKubeconfig, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		qps        float32
		burst      int
		wantQPS    float32
		wantBucket bool
	}{
		{"defaults", 0, 0, DefaultKubeAPIQPS, true},
		{"flags", 50, 100, 50, true},
		{"off", -1, 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mgr, err := New(fromKubeconfig, nil, Options{
				MetricsBindAddress:     "0",
				HealthProbeBindAddress: "0",
				StoragePath:            t.TempDir(),
				SkipNameValidation:     true,
				KubeAPIQPS:             tc.qps,
				KubeAPIBurst:           tc.burst,
			})
			if err != nil {
				t.Fatal(err)
			}
			cfg := mgr.GetConfig()
			if cfg.QPS != tc.wantQPS {
				t.Errorf("the manager's QPS is %v, want %v", cfg.QPS, tc.wantQPS)
			}
			if got := cfg.RateLimiter != nil; got != tc.wantBucket {
				t.Fatalf("shared rate limiter: %v, want %v", got, tc.wantBucket)
			}
			if tc.wantBucket && cfg.RateLimiter.QPS() != tc.wantQPS {
				t.Errorf("the shared rate limiter allows %v per second, want %v", cfg.RateLimiter.QPS(), tc.wantQPS)
			}
			if tc.wantBucket && rest.CopyConfig(cfg).RateLimiter != cfg.RateLimiter {
				t.Error("a copy of the config (as for an impersonating client) has its own limiter")
			}
		})
	}
	if fromKubeconfig.QPS != 0 || fromKubeconfig.RateLimiter != nil {
		t.Errorf("New changed the caller's config: QPS %v", fromKubeconfig.QPS)
	}
}
