package v1alpha1

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// copies reads dir's generated copies of the v1beta1 types, by file name.
func copies(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "zz_generated.*.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range files {
		if filepath.Base(f) == "zz_generated.deepcopy.go" { // controller-gen's, checked by config's test
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = data
	}
	return m
}

// staleCopies names the files that differ between the committed and the generated copies,
// or exist in only one of them.
func staleCopies(committed, generated map[string][]byte) []string {
	var stale []string
	for name, data := range generated {
		if c, ok := committed[name]; !ok || !bytes.Equal(c, data) {
			stale = append(stale, name)
		}
	}
	for name := range committed {
		if _, ok := generated[name]; !ok {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	return stale
}

// TestCopiesOfV1beta1AreCurrent fails when this package's copies of the v1beta1 types
// differ from what hack/apicopy writes now: run `go generate ./api/v1alpha1` (then
// `make generate` for deepcopy and the CRDs).
func TestCopiesOfV1beta1AreCurrent(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("go", "run", "../../hack/apicopy", "-src", "../v1beta1", "-dst", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/apicopy: %v\n%s", err, b)
	}
	committed, generated := copies(t, "."), copies(t, out)
	if len(generated) < 11 {
		t.Fatalf("hack/apicopy wrote %d files, want v1beta1's 10 *_types.go files and groupversion_info.go", len(generated))
	}
	if stale := staleCopies(committed, generated); len(stale) > 0 {
		t.Errorf("api/v1alpha1's copies of api/v1beta1 are stale (run `go generate ./api/v1alpha1 && make generate`): %v", stale)
	}

	// The check itself: an edit of v1beta1 that the copies lack, and a copy left behind.
	lagging := map[string][]byte{}
	for name, data := range committed {
		lagging[name] = data
	}
	lagging["zz_generated.application_types.go"] = bytes.Replace(lagging["zz_generated.application_types.go"],
		[]byte(`json:"selfHeal,omitempty"`), []byte(`json:"selfHealing,omitempty"`), 1)
	lagging["zz_generated.removed_types.go"] = []byte("package v1alpha1\n")
	if stale := staleCopies(lagging, generated); len(stale) != 2 ||
		stale[0] != "zz_generated.application_types.go" || stale[1] != "zz_generated.removed_types.go" {
		t.Errorf("stale copies were not detected: %v", stale)
	}
}
