package renderworker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var (
	env *testenv.Env
	// gitsyncBin is gitsync built for the package: the workers run its render-worker.
	gitsyncBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gitsync-renderworker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, &env, func() (func(), error) {
		gitsyncBin, err = gitsyncproc.Build(dir)
		return func() {}, err
	})
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeTree writes files (path → content) under a new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
