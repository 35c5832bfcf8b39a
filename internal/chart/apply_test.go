package chart

import (
	"context"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, installMonitoringCRDs))
}

// installMonitoringCRDs stands in for the Prometheus Operator: its two kinds the chart
// can render, with open schemas.
func installMonitoringCRDs() (func(), error) {
	for _, k := range []struct{ kind, plural string }{{"ServiceMonitor", "servicemonitors"}, {"PrometheusRule", "prometheusrules"}} {
		open := true
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: k.plural + ".monitoring.coreos.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "monitoring.coreos.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: k.kind, Plural: k.plural},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &open,
					}},
				}},
			},
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := env.Client.Create(context.Background(), u); err != nil {
			return nil, err
		}
	}
	return func() {}, nil
}

// renderForCluster renders the chart for the test's API server (its version and kinds).
func renderForCluster(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := helm.ClusterCapabilities(dc)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render(namespace, values, caps)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return objs
}

// apply server-side-applies objs as helm would (CRDs first) and returns each object's
// resourceVersion afterwards. The CRDs go in as the chart has them: their versions
// convert without a webhook (strategy None), so v1alpha1 objects can be written with
// no operator running.
func apply(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	versions := map[string]string{}
	for _, crdsFirst := range []bool{true, false} {
		for _, o := range objs {
			if (o.GetKind() == "CustomResourceDefinition") != crdsFirst {
				continue
			}
			o := o.DeepCopy()
			err := env.Client.Patch(ctx, o, client.Apply, client.ForceOwnership, client.FieldOwner("helm"))
			g.Expect(err).NotTo(HaveOccurred(), "applying %s", key(o))
			versions[key(o)] = o.GetResourceVersion()
		}
	}
	return versions
}

// The chart, rendered with the Helm SDK at its defaults, with sharding, with the
// least-privilege role and with every option on, is accepted by a real API server; a
// second apply changes nothing (no field the server defaults differently from the chart).
func TestChartAppliesToAPIServer(t *testing.T) {
	cases := map[string]map[string]any{
		"defaults": nil,
		"sharded":  {"sharding": map[string]any{"enabled": true, "shards": 3}},
		"everything": {
			"rbac":     map[string]any{"leastPrivilege": true},
			"sharding": map[string]any{"enabled": true, "shards": 2},
			"image":    map[string]any{"digest": "sha256:" + strings.Repeat("a", 64)},
			"tenancy":  map[string]any{"allowCrossNamespaceRefs": true},
			"monitoring": map[string]any{
				"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
				"prometheusRule": map[string]any{"enabled": true},
				"dashboard":      map[string]any{"enabled": true},
			},
			"networkPolicy":  map[string]any{"ingressFrom": []any{map[string]any{"namespaceSelector": map[string]any{}}}},
			"extraArgs":      []any{"--concurrent=8"},
			"podAnnotations": map[string]any{"example.com/a": "b"},
		},
	}
	for _, name := range []string{"defaults", "sharded", "everything"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			objs := renderForCluster(t, ns, cases[name])
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
			}
			crds, err := config.CRDs()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kinds).To(HaveKeyWithValue("CustomResourceDefinition", len(crds)))
			g.Expect(kinds).To(HaveKeyWithValue("PodDisruptionBudget", 1))
			g.Expect(kinds).To(HaveKeyWithValue("NetworkPolicy", 1))
			if name == "everything" {
				g.Expect(kinds).To(HaveKeyWithValue("ServiceMonitor", 1))
				g.Expect(kinds).To(HaveKeyWithValue("PrometheusRule", 1))
				g.Expect(kinds).To(HaveKeyWithValue("ConfigMap", 1))
			}
			first := apply(t, objs)
			g.Expect(first).To(HaveLen(len(objs)))
			g.Expect(apply(t, objs)).To(Equal(first), "a second apply changed objects")
		})
	}
}
