package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
)

// .Capabilities.APIVersions of a chart are the live cluster's: a CRD installed in the API
// server is seen (its group/version and group/version/Kind), one that is not is not; and,
// as with `helm install`, the chart's own crds/ are seen on the first sync, so a custom
// resource gated on its CRD is applied with it.
func TestApplicationHelmCapabilitiesSeeCRDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	suffix := strings.TrimPrefix(env.Namespace(t), "test-")
	installed, own := "installed."+suffix+".example.gitsync.dev", "own."+suffix+".example.gitsync.dev"

	crd := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(manifests.WidgetCRD(installed)), &crd.Object)).To(Succeed())
	g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
	g.Eventually(func(g Gomega) []any {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		return conds
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(
		And(HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))))

	f, sha := newAppFixture(t, map[string]string{
		"caps/Chart.yaml":    "apiVersion: v2\nname: caps\nversion: 0.1.0\n",
		"caps/crds/own.yaml": manifests.WidgetCRD(own),
		"caps/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  installedGV: {{ .Capabilities.APIVersions.Has (printf "%s/v1" .Values.installed) | quote }}
  installedKind: {{ .Capabilities.APIVersions.Has (printf "%s/v1/Widget" .Values.installed) | quote }}
  absent: {{ .Capabilities.APIVersions.Has (printf "absent.%s/v1/Widget" .Values.installed) | quote }}
  own: {{ .Capabilities.APIVersions.Has (printf "%s/v1/Widget" .Values.own) | quote }}
`,
		"caps/templates/widget.yaml": `{{- if .Capabilities.APIVersions.Has (printf "%s/v1/Widget" .Values.own) }}
apiVersion: {{ .Values.own }}/v1
kind: Widget
metadata:
  name: gated
spec:
  size: 2
{{- end }}
`,
	})
	f.app("caps", func(a *gitsyncv1.Application) {
		a.Spec.Path = "caps"
		a.Spec.Helm = &gitsyncv1.HelmSpec{Values: &runtime.RawExtension{Raw: []byte(`{"installed":"` + installed + `","own":"` + own + `"}`)}}
	})
	app := f.waitApplied("caps", sha)
	g.Expect(f.configMap(g, "caps").Data).To(Equal(map[string]string{
		"installedGV": "true", "installedKind": "true", "absent": "false", "own": "true",
	}))
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: own, Version: "v1", Kind: "Widget"})
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "gated"}, widget)).To(Succeed(),
		"the custom resource gated on the chart's own CRD is applied on the first sync")
	g.Expect(app.Status.History).To(HaveLen(1))
}

// A chart whose Chart.yaml kubeVersion the cluster does not match is refused, as by helm
// install: Ready=False with both versions named, nothing applied.
func TestApplicationHelmKubeVersionMismatch(t *testing.T) {
	g := NewWithT(t)
	f, _ := newAppFixture(t, map[string]string{
		"future/Chart.yaml":        "apiVersion: v2\nname: future\nversion: 0.1.0\nkubeVersion: \">=1.99.0-0\"\n",
		"future/templates/cm.yaml": configMapYAML("future", "1"),
	})
	f.app("future", func(a *gitsyncv1.Application) { a.Spec.Path = "future" })
	msg := f.waitNotReady("future", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("chart future requires kubeVersion >=1.99.0-0, which is incompatible with Kubernetes v1.37.1"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "future")).To(BeFalse())
	g.Expect(f.get(g, "future").Status.Inventory).To(BeNil())
}
