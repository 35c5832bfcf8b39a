package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// repoRoot is the directory of the Makefile above the package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no Makefile with a go.mod above the working directory")
		}
		dir = parent
	}
}

// dryRun is what `make -n -B target` would run, one command a line.
func dryRun(t *testing.T, root, target string) []string {
	t.Helper()
	cmd := exec.Command("make", "-n", "-B", "-C", root, "--no-print-directory", target)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// goBuilds are the lines of cmds that run go build, with what they set before it.
func goBuilds(cmds []string) []string {
	var builds []string
	for _, c := range cmds {
		if strings.Contains(c, "go build") {
			builds = append(builds, c)
		}
	}
	return builds
}

// `make build` after `make demo` (or the other way round) must be a cache hit, not minutes
// of recompiling: both build the binary with one command — the same environment (cgo off)
// and flags — and the demo runs the binary that command wrote.
func TestMakeDemoBuildsAsMakeBuild(t *testing.T) {
	g := NewWithT(t)
	root := repoRoot(t)
	build, demo := dryRun(t, root, "build"), dryRun(t, root, "demo")
	g.Expect(goBuilds(build)).To(HaveLen(1), "make build: %q", build)
	g.Expect(goBuilds(demo)).To(Equal(goBuilds(build)), "make demo builds gitsync otherwise than make build: %q", demo)
	g.Expect(build[0]).To(ContainSubstring("-o bin/gitsync "))
	g.Expect(demo[len(demo)-1]).To(ContainSubstring("exec bin/gitsync demo"))
}
