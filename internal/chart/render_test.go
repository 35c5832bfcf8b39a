package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitsync-dev/gitsync/internal/helm"
)

var (
	chartDir  = filepath.Join("..", "..", "charts", "gitsync")
	configDir = filepath.Join("..", "..", "config")
)

// render renders charts/gitsync with the Helm SDK (values validated by its schema), as
// `helm template gitsync charts/gitsync -n namespace` would, and decodes every object.
// Without caps, the cluster is a Kubernetes 1.37 (Helm's default is older than the
// chart's kubeVersion).
func render(namespace string, values map[string]any, caps *common.Capabilities) ([]*unstructured.Unstructured, error) {
	c, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	if caps == nil {
		caps = common.DefaultCapabilities.Copy()
		v, err := common.ParseKubeVersion("v1.37.1")
		if err != nil {
			return nil, err
		}
		caps.KubeVersion = *v
	}
	out, err := helm.Render(context.Background(), c, helm.Options{
		ReleaseName: "gitsync", Namespace: namespace, Values: []map[string]any{values}, Capabilities: caps,
	})
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, m := range out.Templates {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m.Data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, err
			}
			if len(obj.Object) > 0 {
				objs = append(objs, normalize(obj))
			}
		}
	}
	return objs, nil
}

func mustRender(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(namespace, values, nil)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return objs
}

// kustomize renders a kustomization of config/ from disk, as `kubectl apply -k` does.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(configDir, dir))
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, normalize(&unstructured.Unstructured{Object: m}))
	}
	return objs
}

// normalize passes obj through JSON, so that numbers are alike whatever decoded it.
func normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		panic(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
