package helm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// copyChart copies testdata/shop into a temp checkout and returns the checkout root.
func copyChart(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("testdata", "shop")
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(root, "charts", "shop", rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// renderedObjects lists "Kind/name" of each YAML document of the rendered templates.
func renderedObjects(tb testing.TB, r *Rendered) []string {
	tb.Helper()
	var out []string
	for _, m := range r.Templates {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m.Data), 4096)
		for {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatalf("%s: %v", m.Name, err)
			}
			if obj.Kind != "" {
				out = append(out, obj.Kind+"/"+obj.Metadata.Name)
			}
		}
	}
	return out
}

func configMapData(g Gomega, r *Rendered, name string) map[string]string {
	for _, m := range r.Templates {
		if strings.HasSuffix(m.Name, name) {
			var obj struct {
				Data map[string]string `json:"data"`
			}
			g.Expect(yaml.Unmarshal(m.Data, &obj)).To(Succeed())
			return obj.Data
		}
	}
	return nil
}

func TestRenderMergesValuesInOrder(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")
	g.Expect(IsChart(dir)).To(BeTrue())
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	fromFile, err := ReadValuesFile(root, dir, "env/prod.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	fromSecret := map[string]any{"size": "from valuesFrom", "tier": "valuesFrom"}
	inline := map[string]any{"tier": "inline"}

	r, err := Render(context.Background(), c, Options{
		ReleaseName: "web", Namespace: "team-a",
		Values: []map[string]any{fromFile, fromSecret, inline},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Chart).To(Equal("shop"))
	g.Expect(r.Version).To(Equal("1.2.0"))
	data := configMapData(g, r, "shop/templates/configmap.yaml")
	g.Expect(data).To(HaveKeyWithValue("greeting", "from chart defaults"), "chart default, not overridden")
	g.Expect(data).To(HaveKeyWithValue("color", "blue"), "valuesFiles over chart defaults")
	g.Expect(data).To(HaveKeyWithValue("size", "from valuesFrom"), "valuesFrom over valuesFiles")
	g.Expect(data).To(HaveKeyWithValue("tier", "inline"), "inline values last")
	g.Expect(data).To(HaveKeyWithValue("namespace", "team-a"))
	g.Expect(data).To(HaveKeyWithValue("install", "true"))
	g.Expect(data).To(HaveKeyWithValue("upgrade", "false"))
	g.Expect(data).To(HaveKeyWithValue("hasWidgets", "true"), "the chart's own crds/ are capabilities, as helm install creates them first")

	var names []string
	for _, m := range r.Templates {
		names = append(names, m.Name)
	}
	g.Expect(names).To(Equal([]string{
		"shop/charts/cache/templates/configmap.yaml",
		"shop/templates/configmap.yaml",
		"shop/templates/deployment.yaml",
	}), "NOTES.txt, partials, tests/ and empty templates are left out; the vendored subchart is in")
	g.Expect(r.CRDs).To(HaveLen(1))
	g.Expect(string(r.CRDs[0].Data)).To(ContainSubstring("widgets.example.com"))
}

func TestRenderCapabilitiesUpgradeSubchartsAndCRDs(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	c, err := LoadDir(root, filepath.Join(root, "charts", "shop"))
	g.Expect(err).NotTo(HaveOccurred())
	caps := common.DefaultCapabilities.Copy()
	kv, _ := common.ParseKubeVersion("v1.37.1")
	caps.KubeVersion = *kv
	caps.APIVersions = append(caps.APIVersions, "example.com/v1", "example.com/v1/Widget")
	r, err := Render(context.Background(), c, Options{
		ReleaseName: "web", Namespace: "ns", IsUpgrade: true, Capabilities: caps, SkipCRDs: true,
		Values: []map[string]any{{"cache": map[string]any{"enabled": false}, "widget": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	data := configMapData(g, r, "shop/templates/configmap.yaml")
	g.Expect(data).To(HaveKeyWithValue("upgrade", "true"))
	g.Expect(data).To(HaveKeyWithValue("install", "false"))
	g.Expect(data).To(HaveKeyWithValue("kube", "v1.37.1"))
	g.Expect(data).To(HaveKeyWithValue("hasWidgets", "true"))
	g.Expect(r.CRDs).To(BeEmpty())
	var names []string
	for _, m := range r.Templates {
		names = append(names, m.Name)
	}
	g.Expect(names).NotTo(ContainElement(ContainSubstring("cache")), "a subchart disabled by its condition renders nothing")
	g.Expect(names).To(ContainElement("shop/templates/widget.yaml"))
}

func TestRenderErrorsAreClear(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")

	// A template error names the file and the line.
	g.Expect(os.WriteFile(filepath.Join(dir, "templates", "broken.yaml"), []byte("a: 1\nb: {{ .Values.nope.deeper }}\n"), 0o644)).To(Succeed())
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n"})
	g.Expect(err).To(MatchError(And(ContainSubstring("templates/broken.yaml:2"), ContainSubstring("nil pointer"))))
	g.Expect(os.Remove(filepath.Join(dir, "templates", "broken.yaml"))).To(Succeed())

	// Values files: missing, not YAML, outside the checkout, through a symlink.
	_, err = ReadValuesFile(root, dir, "env/missing.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("values file env/missing.yaml")))
	g.Expect(os.WriteFile(filepath.Join(dir, "env", "bad.yaml"), []byte("password: [s3cret"), 0o644)).To(Succeed())
	_, err = ReadValuesFile(root, dir, "env/bad.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("values env/bad.yaml are not a YAML map")))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	_, err = ReadValuesFile(root, dir, "../../../etc/passwd")
	g.Expect(err).To(MatchError(ContainSubstring("outside the checkout")))
	g.Expect(os.Symlink("/etc/passwd", filepath.Join(dir, "env", "link.yaml"))).To(Succeed())
	_, err = ReadValuesFile(root, dir, "env/link.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("is a symlink")))

	// A symlink anywhere in the chart is refused.
	_, err = LoadDir(root, dir)
	g.Expect(err).To(MatchError(ContainSubstring("env/link.yaml is a symlink")))
	g.Expect(os.Remove(filepath.Join(dir, "env", "link.yaml"))).To(Succeed())

	// A dependency that is not vendored is never fetched.
	g.Expect(os.RemoveAll(filepath.Join(dir, "charts"))).To(Succeed())
	c, err = LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(MissingDependencies(c)).To(HaveLen(1))
	g.Expect(CheckDependencies(c)).To(MatchError(ContainSubstring("dependencies cache are not vendored in charts/")))
}

// `helm install` creates the chart's crds/ before it reads the cluster's capabilities, so
// .Capabilities.APIVersions.Has sees the chart's own CRDs (every served version), unless
// the cluster has the CRD already (helm does not update it); with SkipCRDs (helm install
// --skip-crds) it does not, and the caller's capabilities are left as they were.
func TestRenderCapabilitiesSeeTheChartsCRDs(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")
	g.Expect(os.WriteFile(filepath.Join(dir, "crds", "gadgets.yaml"), []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
    - {name: v1beta1, served: false, storage: false}
    - {name: v1, served: true, storage: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
`), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "templates", "has.yaml"), []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: has}
data:
  widget: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
  gadgetV1: {{ .Capabilities.APIVersions.Has "example.org/v1" | quote }}
  gadgetKind: {{ .Capabilities.APIVersions.Has "example.org/v1/Gadget" | quote }}
  gadgetBeta: {{ .Capabilities.APIVersions.Has "example.org/v1beta1" | quote }}
`), 0o644)).To(Succeed())
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	caps := common.DefaultCapabilities.Copy()
	before := len(caps.APIVersions)

	r, err := Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Capabilities: caps})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configMapData(g, r, "shop/templates/has.yaml")).To(Equal(map[string]string{
		"widget": "true", "gadgetV1": "true", "gadgetKind": "true", "gadgetBeta": "false",
	}))
	g.Expect(caps.APIVersions).To(HaveLen(before), "the caller's capabilities are not changed")

	// A CRD the cluster has already (serving v1beta1 only) is not updated by helm install.
	existing := caps.Copy()
	existing.APIVersions = append(slices.Clone(caps.APIVersions), "example.org/v1beta1", "example.org/v1beta1/Gadget")
	r, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Capabilities: existing})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configMapData(g, r, "shop/templates/has.yaml")).To(Equal(map[string]string{
		"widget": "true", "gadgetV1": "false", "gadgetKind": "false", "gadgetBeta": "true",
	}))

	r, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Capabilities: caps, SkipCRDs: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configMapData(g, r, "shop/templates/has.yaml")).To(Equal(map[string]string{
		"widget": "false", "gadgetV1": "false", "gadgetKind": "false", "gadgetBeta": "false",
	}))
}

// Chart.yaml's kubeVersion is checked against the cluster's version, as helm install does;
// a provider's build suffix (v1.37.1-gke.100) does not make it a prerelease.
func TestRenderChecksKubeVersion(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	caps := func(v string) *common.Capabilities {
		kv, err := common.ParseKubeVersion(v)
		g.Expect(err).NotTo(HaveOccurred())
		out := common.DefaultCapabilities.Copy()
		out.KubeVersion = *kv
		return out
	}
	for _, tc := range []struct {
		want, cluster string
		ok            bool
	}{
		{">=1.23.0-0", "v1.37.1", true},
		{">=1.23.0", "v1.37.1-gke.100", true},
		{"~1.37.0", "v1.37.1", true},
		{">=1.38.0-0", "v1.37.1", false},
		{"<1.30.0", "v1.37.1-eks.2", false},
	} {
		c.Metadata.KubeVersion = tc.want
		_, err := Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Capabilities: caps(tc.cluster)})
		if tc.ok {
			g.Expect(err).NotTo(HaveOccurred(), "%s on %s", tc.want, tc.cluster)
			continue
		}
		g.Expect(err).To(MatchError("chart shop requires kubeVersion "+tc.want+", which is incompatible with Kubernetes "+tc.cluster),
			"%s on %s", tc.want, tc.cluster)
	}
}

// Documents are split as helm install splits them: a separator glued to the next line by
// whitespace chomping ("---apiVersion: v1"), a separator with a comment, and empty
// documents.
func TestRenderSplitsDocumentsAsHelm(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")
	g.Expect(os.WriteFile(filepath.Join(dir, "templates", "glued.yaml"), []byte(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: first
---
{{- if true -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: glued
{{- end }}
--- # a comment
---
apiVersion: v1
kind: Secret
metadata:
  name: last
`), 0o644)).To(Succeed())
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Values: []map[string]any{{"cache": map[string]any{"enabled": false}}}})
	g.Expect(err).NotTo(HaveOccurred())
	var glued string
	for _, m := range r.Templates {
		if m.Name == "shop/templates/glued.yaml" {
			glued = string(m.Data)
		}
	}
	g.Expect(glued).To(ContainSubstring("name: first\n---\napiVersion: v1\nkind: ServiceAccount"), "helm renders %q", glued)
	g.Expect(renderedObjects(t, r)).To(Equal([]string{
		"ConfigMap/r-shop", "Deployment/r-shop", "ConfigMap/first", "ServiceAccount/glued", "Secret/last",
	}))
}

// As with helm install and helm upgrade: an install renders the pre-install and
// post-install hooks, an upgrade the pre-upgrade and post-upgrade ones; a hook of both,
// every object and hooks of other events are in both.
func TestRenderHooksOfInstallOrUpgrade(t *testing.T) {
	g := NewWithT(t)
	root := copyChart(t)
	dir := filepath.Join(root, "charts", "shop")
	hook := func(name, events string) string {
		return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  annotations:\n    helm.sh/hook: " + events +
			"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n"
	}
	g.Expect(os.WriteFile(filepath.Join(dir, "templates", "hooks.yaml"), []byte(strings.Join([]string{
		hook("create-db", "pre-install"),
		hook("migrate", "pre-upgrade"),
		hook("both", "pre-install, pre-upgrade"),
		hook("announce", "post-install"),
		hook("reannounce", "post-upgrade"),
		hook("cleanup", "pre-delete"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
	}, "---\n")), 0o644)).To(Succeed())
	c, err := LoadDir(root, dir)
	g.Expect(err).NotTo(HaveOccurred())
	render := func(upgrade bool) []string {
		r, err := Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", IsUpgrade: upgrade,
			Values: []map[string]any{{"cache": map[string]any{"enabled": false}}}})
		g.Expect(err).NotTo(HaveOccurred())
		return renderedObjects(t, r)
	}
	g.Expect(render(false)).To(Equal([]string{"ConfigMap/r-shop", "Deployment/r-shop",
		"Job/create-db", "Job/both", "Job/announce", "Job/cleanup", "ConfigMap/plain"}))
	g.Expect(render(true)).To(Equal([]string{"ConfigMap/r-shop", "Deployment/r-shop",
		"Job/migrate", "Job/both", "Job/reannounce", "Job/cleanup", "ConfigMap/plain"}))
}
