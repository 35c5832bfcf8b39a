package renderworker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

func newPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	opts.Binary = gitsyncBin
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// liveCluster is the render.Cluster a sync gives an Application of ns: the real API
// server's discovery, scopes and lookup, and valuesFrom read from it.
func liveCluster(t *testing.T, ns string) *render.Cluster {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	return &render.Cluster{
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(env.Config),
		IsNamespaced: func(gk schema.GroupKind) (bool, error) {
			m, err := mapper.RESTMapping(gk)
			if err != nil {
				return false, err
			}
			return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
		},
		Lookup: (&render.LookupClients{}).Provider(env.Config, mapper, ""),
		Values: func(ctx context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
			return render.ReadValuesFrom(ctx, env.Client, ns, ref)
		},
	}
}

func app(ns string, mutate ...func(*gitsyncv1.Application)) *gitsyncv1.Application {
	a := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
	for _, m := range mutate {
		m(a)
	}
	return a
}

const lookupChart = `apiVersion: v2
name: looker
version: 1.2.3
`

// lookupTemplate reads a ConfigMap of the cluster through lookup, the cluster's API
// versions and a value from valuesFrom.
const lookupTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: from-lookup
data:
  found: {{ (lookup "v1" "ConfigMap" .Release.Namespace "seed").data.greeting | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  missing: {{ empty (lookup "v1" "ConfigMap" .Release.Namespace "absent") | quote }}
  fromValues: {{ .Values.color | quote }}
  count: {{ len (lookup "v1" "ConfigMap" .Release.Namespace "").items | quote }}
`

func TestWorkerRendersAsInProcess(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: ns},
		Data: map[string]string{"greeting": "hello"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: ns},
		Data: map[string]string{"values.yaml": "color: teal\n"}})).To(Succeed())
	chartDir := writeTree(t, map[string]string{
		"chart/Chart.yaml": lookupChart, "chart/templates/cm.yaml": lookupTemplate, "chart/values.yaml": "color: red\n",
	})
	kustomizeDir := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: k-\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: b\n",
	})
	chartApp := app(ns, func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "ConfigMap", Name: "vals"}}}
	})
	p := newPool(t, Options{Workers: 1})
	cases := []struct {
		name string
		app  *gitsyncv1.Application
		src  render.Source
	}{
		{"chart with lookup, capabilities and valuesFrom", chartApp, render.Source{Root: chartDir, Path: "chart"}},
		{"kustomize", app(ns), render.Source{Root: kustomizeDir, Path: "app"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cluster := liveCluster(t, ns)
			want, err := render.Render(ctx, tc.app, tc.src, cluster)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := p.Render(ctx, tc.app, tc.src, cluster)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(jsonOf(got.Objects)).To(Equal(jsonOf(want.Objects)))
			g.Expect(got.Chart).To(Equal(want.Chart))
			g.Expect(got.Offline).To(BeFalse())
		})
	}
	got, err := p.Render(ctx, chartApp, render.Source{Root: chartDir, Path: "chart"}, liveCluster(t, ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Objects[0].Object["data"]).To(Equal(map[string]any{
		"found": "hello", "apps": "true", "missing": "true", "fromValues": "teal", "count": "2",
	}), "lookup, capabilities and valuesFrom served by the parent (a List finds the 2 ConfigMaps: seed, vals)")

	// Offline (no cluster): Helm's defaults, lookup finds nothing, valuesFrom is an error
	// of its class.
	_, err = p.Render(ctx, chartApp, render.Source{Root: chartDir, Path: "chart"}, nil)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("valuesFrom"))
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// A ConfigMap named by valuesFrom that does not exist stalls the revision as in process:
// the error keeps its class across the process boundary.
func TestErrorClassesCrossTheBoundary(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := writeTree(t, map[string]string{"chart/Chart.yaml": lookupChart, "chart/templates/cm.yaml": lookupTemplate})
	a := app(ns, func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "ConfigMap", Name: "nope"}}}
	})
	p := newPool(t, Options{Workers: 1})
	_, err := p.Render(context.Background(), a, render.Source{Root: dir, Path: "chart"}, liveCluster(t, ns))
	g.Expect(render.IsValuesError(err)).To(BeTrue(), "%v", err)
	g.Expect(render.IsLimit(err)).To(BeFalse())
}

// A cancelled render leaves nothing waiting: the next render of the pool runs.
func TestWaitingRenderGivesUpAtItsContext(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	p := newPool(t, Options{Workers: 1, Timeout: 3 * time.Second})
	loop := writeTree(t, loopChart())
	ok := writeTree(t, map[string]string{"cm.yaml": configMap("fine", "yes")})
	done := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), app(ns), render.Source{Root: loop, Path: "./"}, nil)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the loop holds the only worker
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Render(ctx, app("other"), render.Source{Root: ok, Path: "./"}, nil)
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(<-done).To(HaveOccurred())
	res, err := p.Render(context.Background(), app("other"), render.Source{Root: ok, Path: "./"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %q\n", name, value)
}

// loopChart is a chart whose template keeps a CPU busy for minutes (cpuTemplate) within
// the templates' own budgets.
func loopChart() map[string]string {
	return map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
		"templates/x.yaml": cpuTemplate + "\n" + configMap("looped", "done"),
	}
}
