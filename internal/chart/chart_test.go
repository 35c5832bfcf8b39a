package chart

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/config"
)

// charts/gitsync/files is what `make chart` makes of config/ now: the test fails when
// config/ (CRDs, RBAC, monitoring) changed without the chart being refreshed.
func TestFilesAreCurrent(t *testing.T) {
	g := NewWithT(t)
	want, err := Generate(os.DirFS(configDir))
	g.Expect(err).NotTo(HaveOccurred())
	got, err := Read(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(want).To(HaveKey("files/crds/gitsync.dev_applications.yaml"))
	for name := range want {
		g.Expect(got).To(HaveKey(name), "charts/gitsync/%s is missing: run make chart", name)
		g.Expect(string(got[name])).To(Equal(string(want[name])), "charts/gitsync/%s is stale: run make chart", name)
	}
	for name := range got {
		g.Expect(want).To(HaveKey(name), "charts/gitsync/%s is not generated any more: run make chart", name)
	}
}

// The chart installs the release whose image config/ names (the latest of hack/releases).
func TestChartVersionIsTheLatestRelease(t *testing.T) {
	g := NewWithT(t)
	var meta struct{ Version, AppVersion string }
	g.Expect(yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &meta)).To(Succeed())
	latest, err := config.LatestRelease(readFile(t, "../../hack/releases"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(meta.AppVersion).To(Equal(latest))
	g.Expect("v" + meta.Version).To(Equal(latest))
}

// key names an object by kind, namespace and name.
func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// chartOnly are the objects the chart adds to config/'s at its default values.
var chartOnly = map[string]bool{
	"PodDisruptionBudget gitsync-system/gitsync": true,
	"NetworkPolicy gitsync-system/gitsync":       true,
	"Service gitsync-system/gitsync-metrics":     true,
}

// sameAsConfig checks that the chart's objects are config's: each of config's (but the
// Namespace, which Helm's --create-namespace makes) rendered, equal in everything but
// labels and annotations, which may only be added to; and nothing else but chartOnly.
func sameAsConfig(t *testing.T, chart, cfg []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	rendered := map[string]*unstructured.Unstructured{}
	for _, o := range chart {
		g.Expect(rendered).NotTo(HaveKey(key(o)), "rendered twice")
		rendered[key(o)] = o
	}
	matched := 0
	for _, want := range cfg {
		if want.GetKind() == "Namespace" {
			continue
		}
		got, ok := rendered[key(want)]
		g.Expect(ok).To(BeTrue(), "the chart does not render %s", key(want))
		if !ok {
			continue
		}
		delete(rendered, key(want))
		w, c := stripMetadata(t, want, got), stripMetadata(t, got, nil)
		if !reflect.DeepEqual(w, c) {
			wy, _ := yaml.Marshal(w)
			cy, _ := yaml.Marshal(c)
			t.Errorf("%s differs from config/:\nconfig:\n%s\nchart:\n%s", key(want), wy, cy)
		}
		matched++
	}
	g.Expect(matched).To(BeNumerically(">=", 10))
	for k := range rendered {
		g.Expect(chartOnly).To(HaveKey(k), "the chart renders %s, which config/ has not", k)
	}
}

// stripMetadata returns o's content without labels and annotations (of the object and of
// a pod template); with superset, it first checks that superset's hold all of o's.
func stripMetadata(t *testing.T, o, superset *unstructured.Unstructured) map[string]any {
	t.Helper()
	out := o.DeepCopy()
	for _, path := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		for _, field := range []string{"labels", "annotations"} {
			p := append(append([]string{}, path...), field)
			have, _, _ := unstructured.NestedStringMap(o.Object, p...)
			if superset != nil {
				more, _, _ := unstructured.NestedStringMap(superset.Object, p...)
				for k, v := range have {
					if more[k] != v {
						t.Errorf("%s: %s %s=%q, chart %q", key(o), strings.Join(p, "."), k, v, more[k])
					}
				}
			}
			unstructured.RemoveNestedField(out.Object, p...)
		}
	}
	if m, ok := out.Object["metadata"].(map[string]any); ok && len(m) == 0 {
		delete(out.Object, "metadata")
	}
	return out.Object
}

// At its default values the chart is config/default, i.e. `gitsync install` and the OLM
// bundle (both made from config.Install()): CRDs, RBAC, the Deployment and its
// arguments (tenant mode), the Service.
func TestDefaultsAreConfigDefault(t *testing.T) {
	objs, err := config.Install()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cfg := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		cfg[i] = normalize(o)
	}
	sameAsConfig(t, mustRender(t, "gitsync-system", nil), cfg)
}

// With sharding on, the chart is config/sharded: a StatefulSet, pod N running --shard N/M.
func TestShardingIsConfigSharded(t *testing.T) {
	for _, shards := range []int{2, 3} {
		t.Run(fmt.Sprint(shards), func(t *testing.T) {
			cfg := kustomize(t, "sharded")
			if shards != 2 { // config/sharded's comment: for M shards, replicas and the flag
				for _, o := range cfg {
					if o.GetKind() == "StatefulSet" {
						_ = unstructured.SetNestedField(o.Object, int64(shards), "spec", "replicas")
						setLastArg(t, o, fmt.Sprintf("--shard=$(POD_INDEX)/%d", shards))
					}
				}
			}
			sameAsConfig(t, mustRender(t, "gitsync-system", map[string]any{
				"sharding": map[string]any{"enabled": true, "shards": shards},
			}), cfg)
		})
	}
}

func setLastArg(t *testing.T, o *unstructured.Unstructured, arg string) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	args := c["args"].([]any)
	args[len(args)-1] = arg
	if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// rbac.leastPrivilege is config/least-privilege: the tenant-mode ClusterRole bound.
func TestLeastPrivilegeIsConfigLeastPrivilege(t *testing.T) {
	sameAsConfig(t, mustRender(t, "gitsync-system", map[string]any{"rbac": map[string]any{"leastPrivilege": true}}),
		kustomize(t, "least-privilege"))
}

// The values schema refuses what would render a broken install, and the templates refuse
// a least-privilege role without tenant mode.
func TestBadValuesAreRefused(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"unknown key":           {"imag": map[string]any{"tag": "v1"}},
		"zero shards":           {"sharding": map[string]any{"enabled": true, "shards": 0}},
		"replicas not a number": {"replicas": "two"},
		"digest not a digest":   {"image": map[string]any{"digest": "latest"}},
		"bad account name":      {"tenancy": map[string]any{"defaultServiceAccount": "Team_A"}},
		"bad size":              {"storage": map[string]any{"sizeLimit": "lots"}},
		"arg not a flag":        {"extraArgs": []any{"run"}},
		"least privilege without tenant mode": {
			"rbac": map[string]any{"leastPrivilege": true}, "tenancy": map[string]any{"defaultServiceAccount": ""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render("gitsync-system", values, nil)
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
}

// The manager's pod, at the defaults: the release's image, non-root on a read-only root
// filesystem with no capabilities, probes on :8081, bounded scratch space, tenant mode
// and leader election on.
func TestDefaultPodIsLockedDown(t *testing.T) {
	g := NewWithT(t)
	var pod map[string]any
	for _, o := range mustRender(t, "gitsync-system", nil) {
		if o.GetKind() == "Deployment" {
			pod, _, _ = unstructured.NestedMap(o.Object, "spec", "template", "spec")
		}
	}
	g.Expect(pod).NotTo(BeNil())
	get := func(path ...string) any {
		v, _, err := unstructured.NestedFieldNoCopy(pod, path...)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	g.Expect(get("securityContext", "runAsNonRoot")).To(BeTrue())
	g.Expect(get("securityContext", "runAsUser")).To(BeEquivalentTo(65532))
	g.Expect(get("securityContext", "seccompProfile", "type")).To(Equal("RuntimeDefault"))
	c := pod["containers"].([]any)[0].(map[string]any)
	g.Expect(c["image"]).To(Equal(config.ImageRepository + ":v0.1.0"))
	sc := c["securityContext"].(map[string]any)
	g.Expect(sc["readOnlyRootFilesystem"]).To(BeTrue())
	g.Expect(sc["allowPrivilegeEscalation"]).To(BeFalse())
	g.Expect(sc["capabilities"]).To(Equal(map[string]any{"drop": []any{"ALL"}}))
	g.Expect(c["args"]).To(ContainElements("--leader-elect", "--default-service-account=gitsync-tenant", "--health-probe-bind-address=:8081"))
	g.Expect(c["readinessProbe"]).To(HaveKeyWithValue("httpGet", map[string]any{"path": "/readyz", "port": "probes"}))
	g.Expect(c["livenessProbe"]).To(HaveKeyWithValue("httpGet", map[string]any{"path": "/healthz", "port": "probes"}))
	g.Expect(c["resources"]).To(HaveKey("limits"))
	for _, v := range pod["volumes"].([]any) {
		g.Expect(v).To(HaveKeyWithValue("emptyDir", HaveKey("sizeLimit")))
	}
	for _, image := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"tag": "v0.2.0"}, config.ImageRepository + ":v0.2.0"},
		{map[string]any{"repository": "registry.example/gitsync", "digest": "sha256:" + strings.Repeat("0", 64)}, "registry.example/gitsync@sha256:" + strings.Repeat("0", 64)},
	} {
		objs := mustRender(t, "gitsync-system", map[string]any{"image": image.values})
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				g.Expect(containers[0].(map[string]any)["image"]).To(Equal(image.want))
			}
		}
	}
}

// What hack/chart writes is what the stale check reads back, and files/ is replaced as a
// whole (a file config/ no longer has disappears).
func TestWriteReplacesFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(Write(dir, map[string][]byte{"files/old.yaml": []byte("old")})).To(Succeed())
	files, err := Generate(os.DirFS(configDir))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Write(dir, files)).To(Succeed())
	got, err := Read(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(files))
	g.Expect(Write(dir, map[string][]byte{"templates/x.yaml": nil})).NotTo(Succeed())
}
