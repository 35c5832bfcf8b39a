// Package release checks out and builds an earlier gitsync release (its commit from hack/releases) in a throwaway git worktree, for upgrade tests.
package release

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// Release is an earlier release checked out in a git worktree and built.
type Release struct {
	// Version is the release's name in hack/releases (vX.Y.Z); Commit its commit.
	Version, Commit string
	// Source is the worktree; Binary the `gitsync` built from it.
	Source, Binary string
	repo           string
}

// CRDDirectory is where the release keeps its CRDs.
func (r *Release) CRDDirectory() string { return filepath.Join(r.Source, "config", "crd", "bases") }

// RepoRoot is the top of the git repository that holds the working directory.
func RepoRoot() (string, error) {
	out, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("finding the repository's root: %w", err)
	}
	return out, nil
}

// Latest is the last release listed in hack/releases of the repository at root.
func Latest(root string) (string, error) {
	releases, err := list(root)
	if err != nil {
		return "", err
	}
	if len(releases) == 0 {
		return "", fmt.Errorf("%s lists no release", filepath.Join(root, "hack", "releases"))
	}
	return releases[len(releases)-1][0], nil
}

// Commit reads version's commit from hack/releases of the repository at root (lines
// "vX.Y.Z <commit>"; # starts a comment): a clone may carry no tags, this file it does.
func Commit(root, version string) (string, error) {
	releases, err := list(root)
	if err != nil {
		return "", err
	}
	for _, r := range releases {
		if r[0] == version {
			return r[1], nil
		}
	}
	return "", fmt.Errorf("%s lists no release %s", filepath.Join(root, "hack", "releases"), version)
}

// list reads hack/releases: [version, commit] pairs in the file's order.
func list(root string) ([][2]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "hack", "releases"))
	if err != nil {
		return nil, fmt.Errorf("reading the release list: %w", err)
	}
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if fields := strings.Fields(line); len(fields) == 2 {
			out = append(out, [2]string{fields[0], fields[1]})
		}
	}
	return out, sc.Err()
}

// Build checks out version's commit of the repository at root in a worktree under dir
// and builds its ./cmd/gitsync (the module cache and build cache are shared, so a warm
// machine takes seconds). A commit missing from the clone (a shallow clone) is an error
// that says so. Call Remove when done, also after an error of a later step.
func Build(root, version, dir string) (*Release, error) {
	commit, err := Commit(root, version)
	if err != nil {
		return nil, err
	}
	if _, err := git(root, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return nil, fmt.Errorf("commit %s of release %s is not in this clone (a shallow clone? `git fetch --unshallow` fetches it): %w", commit, version, err)
	}
	r := &Release{Version: version, Commit: commit, repo: root,
		Source: filepath.Join(dir, "gitsync-"+version), Binary: filepath.Join(dir, "gitsync-"+version+"-bin")}
	if _, err := git(root, "worktree", "add", "--detach", r.Source, commit); err != nil {
		return nil, fmt.Errorf("checking out release %s: %w", version, err)
	}
	if err := gitsyncproc.BuildAt(r.Source, r.Binary); err != nil {
		return r, fmt.Errorf("release %s: %w", version, err)
	}
	return r, nil
}

// Remove deletes the worktree and prunes the repository's record of it.
func (r *Release) Remove() error {
	if _, err := git(r.repo, "worktree", "remove", "--force", r.Source); err != nil {
		return fmt.Errorf("removing the worktree of %s: %w", r.Version, err)
	}
	if _, err := git(r.repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("pruning worktrees: %w", err)
	}
	return nil
}

// git runs git in dir (the working directory when empty), without the user's or the
// system's configuration, and returns its trimmed output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}
