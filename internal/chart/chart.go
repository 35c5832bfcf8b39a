// Package chart keeps gitsync's own Helm chart (charts/gitsync) in step with config/, the
// source of `gitsync install` and of the OLM bundle: the chart's files/ folder holds
// verbatim copies of config/'s CRDs, ClusterRoles, leader-election Role and monitoring
// rules, which its
// templates read, and the chart's test renders the chart and compares every object with
// config/'s. `make chart` (go run ./hack/chart) refreshes files/.
package chart

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// FilesDir is the folder of the chart that Generate fills.
const FilesDir = "files"

// copies maps a glob of config/ to the folder of files/ its matches are copied to.
var copies = []struct{ glob, to string }{
	{"crd/bases/*.yaml", "crds"},
	{"rbac/role.yaml", "rbac"},
	{"rbac/leader_election_role.yaml", "rbac"},
	{"rbac/tenant-mode/role.yaml", "rbac/tenant-mode"},
	{"monitoring/prometheusrule.yaml", "monitoring"},
	{"monitoring/gitsync-dashboard.json", "monitoring"},
}

// Generate returns the chart's files/ folder made from config: path (relative to the
// chart, slash-separated) → content.
func Generate(config fs.FS) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, c := range copies {
		matches, err := fs.Glob(config, c.glob)
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("config/%s matches nothing", c.glob)
		}
		for _, m := range matches {
			data, err := fs.ReadFile(config, m)
			if err != nil {
				return nil, fmt.Errorf("reading config/%s: %w", m, err)
			}
			files[path.Join(FilesDir, c.to, path.Base(m))] = data
		}
	}
	return files, nil
}

// Read returns the files under the chart's files/ folder, as Generate names them.
func Read(chartDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	root := filepath.Join(chartDir, FilesDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(chartDir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	return files, nil
}

// Write replaces the chart's files/ folder with files.
func Write(chartDir string, files map[string][]byte) error {
	if err := os.RemoveAll(filepath.Join(chartDir, FilesDir)); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasPrefix(name, FilesDir+"/") {
			return fmt.Errorf("%s is outside %s/", name, FilesDir)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(chartDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
