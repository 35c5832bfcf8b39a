package config

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// controllerGen runs the pinned controller-gen (the Makefile's) from the repository root.
func controllerGen(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
}

// staleFiles returns the generated YAML files that differ from (or are missing in) the
// committed directory; with exact, also the committed ones that are no longer generated.
func staleFiles(t *testing.T, committed, generated string, exact bool) []string {
	t.Helper()
	read := func(dir string) map[string][]byte {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]byte{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m[filepath.Base(f)] = data
		}
		return m
	}
	a, b := read(committed), read(generated)
	var stale []string
	for name, data := range b {
		if !bytes.Equal(a[name], data) {
			stale = append(stale, name)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok && exact {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	return stale
}

// TestGeneratedManifestsAreCurrent fails when the committed CRDs or ClusterRole differ from
// what controller-gen makes of the API types and RBAC markers now: run `make generate`.
func TestGeneratedManifestsAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	crds, rbac := t.TempDir(), t.TempDir()
	controllerGen(t, "crd", "paths=./api/...", "output:crd:artifacts:config="+crds)
	controllerGen(t, "rbac:roleName=gitsync-manager", "paths=./internal/controller/...", "output:rbac:artifacts:config="+rbac)

	if stale := staleFiles(t, "crd/bases", crds, true); len(stale) > 0 {
		t.Errorf("config/crd/bases is stale (run `make generate`): %v", stale)
	}
	if stale := staleFiles(t, "rbac", rbac, false); len(stale) > 0 {
		t.Errorf("config/rbac/role.yaml is stale (run `make generate`): %v", stale)
	}

	// The check itself: a committed CRD that lags behind the types is reported.
	lagging := t.TempDir()
	generated, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range generated {
		name := filepath.Base(file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if name == "gitsync.dev_gitrepositories.yaml" {
			data = bytes.Replace(data, []byte("webhookSecretRef:"), []byte("webhookSecret:"), 1)
		}
		if err := os.WriteFile(filepath.Join(lagging, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if stale := staleFiles(t, lagging, crds, true); len(stale) != 1 || stale[0] != "gitsync.dev_gitrepositories.yaml" {
		t.Errorf("a stale CRD was not detected: %v", stale)
	}
}
