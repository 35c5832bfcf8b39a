package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository with one commit whose hack/releases lists v0.1.0 at that
// commit and v0.2.0 at a commit the repository does not hold.
func repo(t *testing.T) (root, commit string) {
	t.Helper()
	root = t.TempDir()
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(git(root, "init", "--quiet", "--initial-branch=main"))
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(git(root, "add", "README"))
	must(git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "one"))
	commit, err := git(root, "rev-parse", "HEAD")
	must(commit, err)
	releases := "# releases\nv0.1.0 " + commit + "\n\nv0.2.0 " + strings.Repeat("0", 40) + " # not fetched\n"
	if err := os.MkdirAll(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hack", "releases"), []byte(releases), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, commit
}

func TestReleaseList(t *testing.T) {
	root, commit := repo(t)
	if v, err := Latest(root); err != nil || v != "v0.2.0" {
		t.Errorf("Latest = %q, %v; want v0.2.0", v, err)
	}
	if c, err := Commit(root, "v0.1.0"); err != nil || c != commit {
		t.Errorf("Commit(v0.1.0) = %q, %v; want %s", c, err, commit)
	}
	if _, err := Commit(root, "v1.0.0"); err == nil || !strings.Contains(err.Error(), "lists no release v1.0.0") {
		t.Errorf("Commit(v1.0.0): %v; want an error naming it", err)
	}
}

// A commit missing from the clone is an error that says so; a worktree is removed and
// pruned (here after a build that fails: the repository holds no Go module).
func TestBuildMissingCommitAndRemove(t *testing.T) {
	root, _ := repo(t)
	if _, err := Build(root, "v0.2.0", t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not in this clone") {
		t.Errorf("Build(v0.2.0): %v; want an error saying the commit is not in the clone", err)
	}
	r, err := Build(root, "v0.1.0", t.TempDir())
	if err == nil || r == nil || !strings.Contains(err.Error(), "building gitsync") {
		t.Fatalf("Build(v0.1.0) = %v, %v; want the worktree and a failed build", r, err)
	}
	if _, err := os.Stat(filepath.Join(r.Source, "README")); err != nil {
		t.Errorf("the worktree holds no checkout: %v", err)
	}
	if err := r.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Source); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if list, _ := git(root, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("git worktree list after Remove:\n%s", list)
	}
}
