package config

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

//go:embed default/*.yaml manager/*.yaml rbac/*.yaml crd/*.yaml crd/bases/*.yaml
var installFS embed.FS

// Install renders config/default (CRDs, RBAC, the manager in gitsync-system) with
// kustomize in process, from the copy embedded in the binary, as `kubectl apply -k
// config/default` would.
func Install() ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(installFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := installFS.ReadFile(p)
		if err != nil {
			return err
		}
		if err := mem.MkdirAll(path.Dir("/config/" + p)); err != nil {
			return err
		}
		return mem.WriteFile("/config/"+p, data)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded config: %w", err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/config/default")
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/default: %w", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		// Through JSON, so that numbers are int64/float64 as in any decoded object.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build config/default: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build config/default: %w", err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
