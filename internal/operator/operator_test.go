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
// client-go would turn into 5 requests per second (an apply of 300 objects then takes two
// minutes): the manager's config must not be throttled on the client side, and a QPS the
// caller set is kept.
func TestNewDoesNotThrottleAKubeconfigWithoutQPS(t *testing.T) {
	data, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	fromKubeconfig, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	withQPS := rest.CopyConfig(fromKubeconfig)
	withQPS.QPS, withQPS.Burst = 50, 100
	for _, tc := range []struct {
		name    string
		cfg     *rest.Config
		wantQPS float32
	}{
		{"kubeconfig without qps", fromKubeconfig, -1},
		{"qps set by the caller", withQPS, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mgr, err := New(tc.cfg, nil, Options{
				MetricsBindAddress:     "0",
				HealthProbeBindAddress: "0",
				StoragePath:            t.TempDir(),
				SkipNameValidation:     true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := mgr.GetConfig().QPS; got != tc.wantQPS {
				t.Errorf("the manager's QPS is %v, want %v", got, tc.wantQPS)
			}
		})
	}
	if fromKubeconfig.QPS != 0 {
		t.Errorf("New changed the caller's config: QPS %v", fromKubeconfig.QPS)
	}
}
