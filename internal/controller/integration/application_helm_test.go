package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// chartFiles reads internal/helm/testdata/shop as repository files under prefix.
func chartFiles(t *testing.T, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	src := filepath.Join("..", "..", "helm", "testdata", "shop")
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(filepath.Join(prefix, rel))] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestApplicationHelmChartInGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	files := chartFiles(t, "chart")
	f, sha := newAppFixture(t, files)
	// An object for lookup, and a Secret with values.
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "existing", Namespace: f.ns},
		Data: map[string]string{"value": "found it"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: f.ns},
		StringData: map[string]string{"values.yaml": "size: from-secret\ntier: secret\n"}})).To(Succeed())
	f.app("shop", func(a *gitsyncv1.Application) {
		a.Spec.Path = "chart"
		a.Spec.Prune = true
		a.Spec.Helm = &gitsyncv1.HelmSpec{
			ValuesFiles: []string{"env/prod.yaml"},
			ValuesFrom:  []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "vals"}, {Kind: "ConfigMap", Name: "absent", Optional: true}},
			Values:      &runtime.RawExtension{Raw: []byte(`{"tier":"inline","widget":true}`)},
		}
	})
	app := f.waitApplied("shop", sha)
	g.Expect(app.Status.Sync.Chart).To(Equal("shop"))
	g.Expect(app.Status.Sync.ChartVersion).To(Equal("1.2.0"))
	g.Expect(app.Status.History[0].Chart).To(Equal("shop"))

	cm := f.configMap(g, "shop-shop")
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "from chart defaults"))
	g.Expect(cm.Data).To(HaveKeyWithValue("color", "blue"), "valuesFiles")
	g.Expect(cm.Data).To(HaveKeyWithValue("size", "from-secret"), "valuesFrom")
	g.Expect(cm.Data).To(HaveKeyWithValue("tier", "inline"), "inline values")
	g.Expect(cm.Data).To(HaveKeyWithValue("looked-up", "found it"), "lookup reads the cluster")
	g.Expect(cm.Data).To(HaveKeyWithValue("install", "true"))
	g.Expect(cm.Data).To(HaveKeyWithValue("kube", "v1.37.1"), "capabilities from the cluster")
	g.Expect(cm.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "shop"))
	g.Expect(f.configMap(g, "shop-cache").Data).To(HaveKeyWithValue("memory", "64Mi"), "the vendored subchart")
	// The chart's crds/ and a CR of it in one revision.
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shop-shop"}, widget)).To(Succeed())
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shop-shop"}, deploy)).To(Succeed())
	g.Expect(*deploy.Spec.Replicas).To(Equal(int32(3)))

	// Drift on a rendered object is corrected.
	deploy.Spec.Template.Spec.Containers[0].Image = "example.com/shop:hacked"
	g.Expect(env.Client.Update(ctx, deploy, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shop-shop"}, deploy)).To(Succeed())
		return deploy.Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("example.com/shop:1.2"))

	// A second sync is an upgrade; a value removed goes back to the chart's default; an
	// object the chart no longer renders is pruned.
	f.edit(g, "shop", func(a *gitsyncv1.Application) {
		a.Spec.Helm.ValuesFiles = nil
		a.Spec.Helm.Values = &runtime.RawExtension{Raw: []byte(`{"cache":{"enabled":false}}`)}
	})
	g.Eventually(func(g Gomega) {
		data := f.configMap(g, "shop-shop").Data
		g.Expect(data).To(HaveKeyWithValue("upgrade", "true"))
		g.Expect(data).To(HaveKeyWithValue("color", "grey"))
		g.Expect(data).To(HaveKeyWithValue("tier", "secret"))
		g.Expect(f.exists(g, &corev1.ConfigMap{}, "shop-cache")).To(BeFalse())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestApplicationHelmBadInput(t *testing.T) {
	g := NewWithT(t)
	files := chartFiles(t, "chart")
	f, sha := newAppFixture(t, files)
	f.app("shop", func(a *gitsyncv1.Application) {
		a.Spec.Path = "chart"
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "missing"}}}
	})
	msg := f.waitNotReady("shop", gitsyncv1.ValuesNotFoundReason)
	g.Expect(msg).To(ContainSubstring("valuesFrom Secret missing key values.yaml: not found"))

	f.edit(g, "shop", func(a *gitsyncv1.Application) { a.Spec.Helm = nil })
	f.waitApplied("shop", sha)

	// A template error names the file and line, and the last good state stays.
	files["chart/templates/broken.yaml"] = "a: {{ .Values.nope.deeper }}\n"
	f.repo.Commit("main", "broken template", files)
	msg = f.waitNotReady("shop", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("templates/broken.yaml:1"))
	g.Expect(f.configMap(g, "shop-shop").Data).To(HaveKeyWithValue("greeting", "from chart defaults"))

	// A missing values file.
	delete(files, "chart/templates/broken.yaml")
	sha = f.repo.Commit("main", "fixed", files, "chart/templates/broken.yaml")
	f.waitApplied("shop", sha)
	f.edit(g, "shop", func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFiles: []string{"env/staging.yaml"}}
	})
	msg = f.waitNotReady("shop", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("values file env/staging.yaml"))
}
