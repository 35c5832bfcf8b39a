package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func write(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func app(mutate ...func(*gitsyncv1.Application)) *gitsyncv1.Application {
	a := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}}
	for _, m := range mutate {
		m(a)
	}
	return a
}

// An offline render says so, defaults namespaces with the built-in scopes, and refuses
// valuesFrom (which only the cluster can answer).
func TestRenderOffline(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"plain/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"chart/crds/w.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}, versions: [{name: v1, served: true, storage: true}]}\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube}\ndata: {v: {{ .Capabilities.KubeVersion.Version | quote }}}\n",
	})
	res, err := Render(context.Background(), app(func(a *gitsyncv1.Application) { a.Spec.TargetNamespace = "prod" }), Source{Root: root, Path: "plain"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Offline || len(res.Objects) != 2 {
		t.Fatalf("offline %v, %d objects", res.Offline, len(res.Objects))
	}
	for _, o := range res.Objects {
		want := "prod"
		if o.GetKind() == "ClusterRole" {
			want = ""
		}
		if o.GetNamespace() != want {
			t.Errorf("%s in namespace %q, want %q", o.GetKind(), o.GetNamespace(), want)
		}
	}

	res, err = Render(context.Background(), app(), Source{Root: root, Path: "chart"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chart.Name != "c" || len(res.Chart.CRDs) != 1 || !res.Chart.CreateOnly {
		t.Fatalf("chart %+v", res.Chart)
	}
	if !res.Chart.IsCreateOnly(res.Objects[0]) || len(res.Chart.Watched(res.Objects)) != 1 {
		t.Fatalf("the CRD of crds/ is create-only and not watched")
	}

	_, err = Render(context.Background(), app(func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "v"}}}
	}), Source{Root: root, Path: "chart"}, nil)
	if err == nil {
		t.Fatal("valuesFrom rendered offline")
	}
}

// With a cluster, a chart sees the capabilities it gives (here through IsNamespaced and
// Values only) and the Skip policy still names the chart's CRDs.
func TestRenderSkipNamesCRDs(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"crds/w.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}, versions: [{name: v1, served: true, storage: true}]}\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {v: {{ .Values.v | quote }}}\n",
	})
	cluster := &Cluster{
		IsNamespaced: func(schema.GroupKind) (bool, error) { return true, nil },
		Values: func(context.Context, gitsyncv1.ValuesReference) (map[string]any, error) {
			return map[string]any{"v": "from the cluster"}, nil
		},
	}
	res, err := Render(context.Background(), app(func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{CRDs: gitsyncv1.HelmCRDsSkip, ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "v"}}}
	}), Source{Root: root}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if res.Offline || len(res.Objects) != 1 || res.Objects[0].Object["data"].(map[string]any)["v"] != "from the cluster" {
		t.Fatalf("objects %v", res.Objects)
	}
	if len(res.Chart.CRDs) != 1 || res.Chart.CreateOnly {
		t.Fatalf("Skip: %+v", res.Chart)
	}
}

// A render error never quotes a value read from a valuesFrom Secret (a template that
// fails with it, a schema that refuses it).
func TestRenderErrorsHideSecretValues(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"templates/cm.yaml": "{{ fail (printf \"cannot use password %s\" .Values.db.password) }}\n",
	})
	const secret = "S3cr3t-Value!"
	cluster := &Cluster{Values: func(_ context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
		return map[string]any{"db": map[string]any{"password": secret}}, nil
	}}
	_, err := Render(context.Background(), app(func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "db"}}}
	}), Source{Root: root}, cluster)
	if err == nil {
		t.Fatal("the chart rendered")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error quotes the Secret's value: %v", err)
	}
	if !strings.Contains(err.Error(), "cannot use password") {
		t.Fatalf("the error lost its text: %v", err)
	}
}
