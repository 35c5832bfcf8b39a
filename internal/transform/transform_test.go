package transform

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A Deployment as a chart renders it, a Service and a ConfigMap.
const rendered = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  labels:
    app.kubernetes.io/name: web
    helm.sh/chart: web-1.0.0
  annotations:
    team: payments
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      initContainers:
      - name: migrate
        image: ghcr.io/acme/web:1.0.0
        args: [migrate]
      - name: wait
        image: busybox:1.36
      containers:
      - name: web
        image: ghcr.io/acme/web:1.0.0
        ports:
        - containerPort: 8080
      - name: proxy
        image: envoyproxy/envoy:v1.30.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: apps
  labels:
    app.kubernetes.io/name: web
  annotations:
    prometheus.io/scrape: "true"
spec:
  selector:
    app.kubernetes.io/name: web
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: apps
  labels:
    tier: config
  annotations:
    team: search
data:
  LOG_LEVEL: info
`

func objects(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range splitYAML(docs) {
		data, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := utiljson.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func apply(t *testing.T, opts Options) []*unstructured.Unstructured {
	t.Helper()
	out, err := Apply(objects(t, rendered), opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func field(obj *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	return v
}

// container returns the named container (or initContainer) of a Deployment.
func container(obj *unstructured.Unstructured, list, name string) map[string]any {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", list)
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func TestStrategicMergePatch(t *testing.T) {
	for name, target := range map[string]*gitsyncv1.PatchSelector{
		"by kind":          {Kind: "Deployment"},
		"by group/version": {Group: "apps", Version: "v1", Name: "w.*"},
		"without target":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			patch := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    patched: "yes"
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        resources:
          limits:
            memory: 256Mi
        env:
        - name: MODE
          value: production
`
			out := apply(t, Options{Patches: []gitsyncv1.Patch{{Patch: patch, Target: target}}})
			g.Expect(out).To(HaveLen(3))
			d := out[0]
			g.Expect(field(d, "spec", "replicas")).To(Equal(int64(3)))
			g.Expect(d.GetLabels()).To(HaveKeyWithValue("patched", "yes"))
			g.Expect(d.GetLabels()).To(HaveKeyWithValue("helm.sh/chart", "web-1.0.0"))
			g.Expect(d.GetNamespace()).To(Equal("apps"))
			web := container(d, "containers", "web")
			// Merged by name: the chart's fields stay, the patch's are added.
			g.Expect(web).To(HaveKeyWithValue("image", "ghcr.io/acme/web:1.0.0"))
			g.Expect(web["ports"]).To(HaveLen(1))
			g.Expect(web["resources"]).To(Equal(map[string]any{"limits": map[string]any{"memory": "256Mi"}}))
			g.Expect(web["env"]).To(Equal([]any{map[string]any{"name": "MODE", "value": "production"}}))
			g.Expect(container(d, "containers", "proxy")).To(HaveKeyWithValue("image", "envoyproxy/envoy:v1.30.0"))
			// Other objects are untouched.
			g.Expect(out[1]).To(Equal(objects(t, rendered)[1]))
		})
	}
}

func TestJSON6902Patch(t *testing.T) {
	g := NewWithT(t)
	yamlOps := `- op: replace
  path: /spec/replicas
  value: 5
- op: add
  path: /spec/template/spec/containers/0/args
  value: ["--port=8080"]
- op: remove
  path: /spec/template/spec/initContainers/1
`
	jsonOps := `[{"op": "add", "path": "/metadata/annotations/patched-by", "value": "json6902"}]`
	out := apply(t, Options{Patches: []gitsyncv1.Patch{
		{Patch: yamlOps, Target: &gitsyncv1.PatchSelector{Kind: "Deployment", Name: "web"}},
		{Patch: jsonOps, Target: &gitsyncv1.PatchSelector{Namespace: "apps", LabelSelector: "app.kubernetes.io/name=web"}},
	}})
	d := out[0]
	g.Expect(field(d, "spec", "replicas")).To(Equal(int64(5)))
	g.Expect(container(d, "containers", "web")["args"]).To(Equal([]any{"--port=8080"}))
	g.Expect(container(d, "initContainers", "wait")).To(BeNil())
	g.Expect(container(d, "initContainers", "migrate")).NotTo(BeNil())
	// The second patch selected the Deployment and the Service by label, not the ConfigMap.
	g.Expect(d.GetAnnotations()).To(HaveKeyWithValue("patched-by", "json6902"))
	g.Expect(out[1].GetAnnotations()).To(HaveKeyWithValue("patched-by", "json6902"))
	g.Expect(out[2].GetAnnotations()).NotTo(HaveKey("patched-by"))
}

func TestTargetSelection(t *testing.T) {
	patch := `[{"op": "add", "path": "/metadata/labels/selected", "value": "true"}]`
	for _, tc := range []struct {
		name   string
		target gitsyncv1.PatchSelector
		want   []string // names of kinds selected
	}{
		{"label selector", gitsyncv1.PatchSelector{LabelSelector: "app.kubernetes.io/name=web,helm.sh/chart"}, []string{"Deployment"}},
		{"label selector set-based", gitsyncv1.PatchSelector{LabelSelector: "app.kubernetes.io/name in (web, api)"}, []string{"Deployment", "Service"}},
		{"annotation selector", gitsyncv1.PatchSelector{AnnotationSelector: "team=search"}, []string{"ConfigMap"}},
		{"annotation selector negated", gitsyncv1.PatchSelector{AnnotationSelector: "team!=search"}, []string{"Deployment", "Service"}},
		{"name regex", gitsyncv1.PatchSelector{Name: "web-.*"}, []string{"ConfigMap"}},
		{"name is anchored", gitsyncv1.PatchSelector{Name: "we"}, nil},
		{"core group", gitsyncv1.PatchSelector{Group: "", Version: "v1", Kind: "Service|ConfigMap"}, []string{"Service", "ConfigMap"}},
		{"namespace", gitsyncv1.PatchSelector{Namespace: "other"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			target := tc.target
			out := apply(t, Options{Patches: []gitsyncv1.Patch{{Patch: patch, Target: &target}}})
			var got []string
			for _, o := range out {
				if o.GetLabels()["selected"] == "true" {
					got = append(got, o.GetKind())
				}
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestDeletePatch(t *testing.T) {
	g := NewWithT(t)
	out := apply(t, Options{Patches: []gitsyncv1.Patch{{
		Patch:  "$patch: delete\napiVersion: v1\nkind: Service\nmetadata:\n  name: any\n",
		Target: &gitsyncv1.PatchSelector{Kind: "Service"},
	}}})
	g.Expect(out).To(HaveLen(2))
	g.Expect(out[0].GetKind()).To(Equal("Deployment"))
	g.Expect(out[1].GetKind()).To(Equal("ConfigMap"))
}

func TestPatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch gitsyncv1.Patch
		want  string
	}{
		{"JSON 6902 without target", gitsyncv1.Patch{Patch: `[{"op": "remove", "path": "/spec"}]`}, "spec.patches[0]: a JSON 6902 patch needs a target"},
		{"missing path", gitsyncv1.Patch{Patch: `[{"op": "replace", "path": "/spec/nothing/here", "value": 1}]`, Target: &gitsyncv1.PatchSelector{Kind: "Deployment"}}, "patching Deployment/apps/web"},
		{"no object", gitsyncv1.Patch{Patch: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web\n"}, "no object is v1 Secret/web"},
		{"no identity", gitsyncv1.Patch{Patch: "spec:\n  replicas: 2\n"}, "needs its own kind and metadata.name"},
		{"bad regex", gitsyncv1.Patch{Patch: "metadata:\n  labels: {a: b}\n", Target: &gitsyncv1.PatchSelector{Name: "("}}, "target"},
		{"bad selector", gitsyncv1.Patch{Patch: "metadata:\n  labels: {a: b}\n", Target: &gitsyncv1.PatchSelector{LabelSelector: "a=(b"}}, "target.labelSelector"},
		{"scalar", gitsyncv1.Patch{Patch: "just text"}, "neither a JSON 6902 list"},
		{"empty", gitsyncv1.Patch{Patch: "  \n"}, "the patch is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(objects(t, rendered), Options{Patches: []gitsyncv1.Patch{tc.patch}})
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestImages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		image gitsyncv1.Image
		// want is the image of the web container, the migrate initContainer (same
		// image) and the wait initContainer.
		web, migrate, wait string
	}{
		{"new tag", gitsyncv1.Image{Name: "ghcr.io/acme/web", NewTag: "1.2.3"}, "ghcr.io/acme/web:1.2.3", "ghcr.io/acme/web:1.2.3", "busybox:1.36"},
		{"new name", gitsyncv1.Image{Name: "ghcr.io/acme/web", NewName: "registry.local/web"}, "registry.local/web:1.0.0", "registry.local/web:1.0.0", "busybox:1.36"},
		{"digest", gitsyncv1.Image{Name: "ghcr.io/acme/web", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			"ghcr.io/acme/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"ghcr.io/acme/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "busybox:1.36"},
		{"initContainer only", gitsyncv1.Image{Name: "busybox", NewName: "mirror.local/busybox", NewTag: "1.37"}, "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/web:1.0.0", "mirror.local/busybox:1.37"},
		{"other image", gitsyncv1.Image{Name: "ghcr.io/acme/api", NewTag: "9"}, "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/web:1.0.0", "busybox:1.36"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := apply(t, Options{Images: []gitsyncv1.Image{tc.image}})[0]
			g.Expect(container(d, "containers", "web")["image"]).To(Equal(tc.web))
			g.Expect(container(d, "initContainers", "migrate")["image"]).To(Equal(tc.migrate))
			g.Expect(container(d, "initContainers", "wait")["image"]).To(Equal(tc.wait))
			g.Expect(container(d, "containers", "proxy")["image"]).To(Equal("envoyproxy/envoy:v1.30.0"))
		})
	}
}

// Images in any kind that has containers: a CronJob's job template too.
func TestImagesCronJob(t *testing.T) {
	g := NewWithT(t)
	cron := objects(t, `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: job
            image: ghcr.io/acme/web:1.0.0
`)
	out, err := Apply(cron, Options{Images: []gitsyncv1.Image{{Name: "ghcr.io/acme/web", NewTag: "2.0.0"}}})
	g.Expect(err).NotTo(HaveOccurred())
	cs, _, _ := unstructured.NestedSlice(out[0].Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
	g.Expect(cs[0]).To(HaveKeyWithValue("image", "ghcr.io/acme/web:2.0.0"))
}

func TestCommonMetadata(t *testing.T) {
	g := NewWithT(t)
	out := apply(t, Options{CommonMetadata: &gitsyncv1.CommonMetadata{
		Labels:      map[string]string{"env": "prod", "app.kubernetes.io/name": "overridden"},
		Annotations: map[string]string{"owner": "platform", "team": "core"},
	}})
	g.Expect(out).To(HaveLen(3))
	for _, o := range out {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("env", "prod"), o.GetKind())
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "overridden"), o.GetKind())
		g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("owner", "platform"), o.GetKind())
		g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("team", "core"), o.GetKind())
	}
	// Metadata only: selectors and pod templates keep the chart's labels.
	g.Expect(field(out[0], "spec", "selector", "matchLabels")).To(Equal(map[string]any{"app.kubernetes.io/name": "web"}))
	g.Expect(field(out[0], "spec", "template", "metadata", "labels")).To(Equal(map[string]any{"app.kubernetes.io/name": "web"}))
	g.Expect(field(out[1], "spec", "selector")).To(Equal(map[string]any{"app.kubernetes.io/name": "web"}))
	g.Expect(field(out[2], "data")).To(Equal(map[string]any{"LOG_LEVEL": "info"}))
}

func TestApplyLeavesInputAlone(t *testing.T) {
	g := NewWithT(t)
	in := objects(t, rendered)
	before := objects(t, rendered)
	_, err := Apply(in, Options{
		Patches:        []gitsyncv1.Patch{{Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 7}]`, Target: &gitsyncv1.PatchSelector{Kind: "Deployment"}}},
		Images:         []gitsyncv1.Image{{Name: "busybox", NewTag: "latest"}},
		CommonMetadata: &gitsyncv1.CommonMetadata{Labels: map[string]string{"a": "b"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in).To(Equal(before))

	out, err := Apply(in, Options{CommonMetadata: &gitsyncv1.CommonMetadata{}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(in))
}

// splitYAML cuts a stream at its "---" lines.
func splitYAML(s string) []string {
	var out []string
	for _, doc := range strings.Split(s, "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			out = append(out, doc)
		}
	}
	return out
}
