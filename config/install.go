package config

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

//go:embed default/*.yaml full-privilege/*.yaml manager/*.yaml rbac/*.yaml rbac/tenant-mode/*.yaml crd/*.yaml crd/bases/*.yaml samples/*.yaml
var installFS embed.FS

// Install renders config/default (CRDs, RBAC, the manager in gitsync-system) with
// kustomize in process, from the copy embedded in the binary, as `kubectl apply -k
// config/default` would. The manager's image is Image(): this build's version when one
// was stamped (see Version), else the latest release's. Its operator account is bound
// to the least-privilege ClusterRole gitsync-manager-tenant-mode.
func Install() ([]*unstructured.Unstructured, error) { return install("/config/default") }

// InstallFullPrivilege is Install with config/full-privilege: the operator's account is
// bound to gitsync-manager (write anything), for installs that run Applications with the
// operator's own identity (`gitsync install --least-privilege=false`).
func InstallFullPrivilege() ([]*unstructured.Unstructured, error) {
	return install("/config/full-privilege")
}

// Samples renders config/samples: an example of every kind, in the stored version (the
// OLM bundle's alm-examples).
func Samples() ([]*unstructured.Unstructured, error) { return build("/config/samples") }

func install(dir string) ([]*unstructured.Unstructured, error) {
	objs, err := build(dir)
	if err != nil {
		return nil, err
	}
	if Version != "" {
		image, err := Image()
		if err != nil {
			return nil, err
		}
		setManagerImage(objs, image)
	}
	return objs, nil
}

// build renders the kustomization dir ("/config/<name>") of the embedded config.
func build(dir string) ([]*unstructured.Unstructured, error) {
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
	name := strings.TrimPrefix(dir, "/")
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", name, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		// Through JSON, so that numbers are int64/float64 as in any decoded object.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", name, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
