package monitoring

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// The gauge follows each object's Ready condition as stored by the API server.
func TestReadyGauge(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	create := func(name string, status metav1.ConditionStatus, suspend bool) {
		repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gitsyncv1.GitRepositorySpec{URL: "https://example.com/org/" + name, Suspend: suspend}}
		if err := env.Client.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
		if status == "" {
			return
		}
		repo.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: status, Reason: "FetchFailed",
			Message: "x", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	create("ok", metav1.ConditionTrue, false)
	create("broken", metav1.ConditionFalse, false)
	create("new", "", false)
	create("paused", metav1.ConditionFalse, true)

	c := &Collector{}
	c.Observe(env.Client)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP gitsync_resource_ready Ready condition of GitRepositories and Applications: 1 True, 0 False, -1 Unknown (suspended objects are left out).
# TYPE gitsync_resource_ready gauge
gitsync_resource_ready{kind="GitRepository",name="broken",namespace="NS",reason="FetchFailed"} 0
gitsync_resource_ready{kind="GitRepository",name="new",namespace="NS",reason=""} -1
gitsync_resource_ready{kind="GitRepository",name="ok",namespace="NS",reason="FetchFailed"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.ReplaceAll(want, "NS", ns)), ReadyMetric); err != nil {
		t.Error(err)
	}
}
