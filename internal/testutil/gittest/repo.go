package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Repo is a bare repository served by a Server. Its methods call t.Fatal
// (with the t given to NewServer) on failure, so call them from the test's
// goroutine. Commits to one Repo are serialized.
type Repo struct {
	s    *Server
	t    testing.TB
	name string
	path string
	mu   sync.Mutex
}

// CreateRepo creates the empty bare repository "<name>.git" with HEAD
// pointing at refs/heads/main.
func (s *Server) CreateRepo(name string) *Repo {
	s.t.Helper()
	name = repoName(name)
	if !filepath.IsLocal(name) {
		s.t.Fatalf("gittest: invalid repository name %q", name)
	}
	r := &Repo{s: s, t: s.t, name: name, path: filepath.Join(s.root, name+".git")}
	s.mu.Lock()
	_, exists := s.repos[name]
	s.repos[name] = r
	s.mu.Unlock()
	if exists {
		s.t.Fatalf("gittest: repository %q already exists", name)
	}
	r.git("", nil, "init", "--quiet", "--bare", "--initial-branch=main", r.path)
	r.git(r.path, nil, "config", "http.receivepack", "true") // allow pushes over HTTP
	return r
}

// Path returns the bare repository's directory.
func (r *Repo) Path() string { return r.path }

// Commit commits files (path -> content; directories are created as needed)
// and the deletion of the paths in deletes on branch, and returns the new
// commit's sha. A new branch starts from main, or from nothing if main does
// not exist.
func (r *Repo) Commit(branch, msg string, files map[string]string, deletes ...string) string {
	r.t.Helper()
	return r.CommitFunc(branch, msg, func(worktree string) {
		r.t.Helper()
		for _, p := range deletes {
			full := r.worktreePath(worktree, p)
			if _, err := os.Lstat(full); err != nil {
				r.t.Fatalf("gittest: delete %s on %s: %v", p, branch, err)
			}
			if err := os.RemoveAll(full); err != nil {
				r.t.Fatalf("gittest: delete %s: %v", p, err)
			}
		}
		for p, content := range files {
			full := r.worktreePath(worktree, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				r.t.Fatalf("gittest: write %s: %v", p, err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				r.t.Fatalf("gittest: write %s: %v", p, err)
			}
		}
	})
}

// CommitFunc checks branch out into a temporary work tree (starting it like
// Commit does), lets change modify the work tree, commits everything in it
// ("git add -A") with msg and returns the new commit's sha.
func (r *Repo) CommitFunc(branch, msg string, change func(worktree string)) string {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()

	tmp, err := os.MkdirTemp(r.s.tmp, "commit-")
	if err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	defer os.RemoveAll(tmp)
	worktree := filepath.Join(tmp, "worktree")
	if err := os.Mkdir(worktree, 0o755); err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	// A private index and work tree on the bare repository: no clone, no
	// push, and the server's counts are left alone.
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	wt := func(args ...string) string {
		r.t.Helper()
		return r.git(worktree, env, append([]string{"--git-dir=" + r.path, "--work-tree=" + worktree}, args...)...)
	}

	ref := "refs/heads/" + branch
	parent := r.resolve(ref)
	if parent == "" {
		parent = r.resolve("refs/heads/main")
	}
	if parent != "" {
		wt("read-tree", parent)
		wt("checkout-index", "--all", "--force")
	}
	change(worktree)
	wt("add", "--all")
	tree := wt("write-tree")

	args := []string{"commit-tree", tree, "-m", msg}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha := r.git(r.path, nil, args...)
	// Only move the branch if nobody else did meanwhile.
	old := r.resolve(ref)
	if old == "" {
		old = strings.Repeat("0", len(sha))
	}
	r.git(r.path, nil, "update-ref", "-m", "gittest: "+msg, ref, sha, old)
	return sha
}

// Tag creates (or moves) the tag name at rev, a sha or branch name. An
// annotated tag gets the message name.
func (r *Repo) Tag(name, rev string, annotated bool) {
	r.t.Helper()
	args := []string{"tag", "--force"}
	if annotated {
		args = append(args, "--annotate", "--message", name)
	}
	r.git(r.path, nil, append(args, name, rev+"^{commit}")...)
}

// Head returns the sha of refs/heads/<branch>.
func (r *Repo) Head(branch string) string {
	r.t.Helper()
	return r.git(r.path, nil, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
}

// SetDefaultBranch points the bare repository's HEAD at refs/heads/<branch>.
func (r *Repo) SetDefaultBranch(branch string) {
	r.t.Helper()
	r.git(r.path, nil, "symbolic-ref", "HEAD", "refs/heads/"+branch)
}

// resolve returns the commit ref points at, or "" if it does not exist.
func (r *Repo) resolve(ref string) string {
	r.t.Helper()
	out, err := r.s.runGit(r.path, nil, "rev-parse", "--quiet", "--verify", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

// worktreePath joins a slash-separated repository path to worktree,
// refusing paths that leave it.
func (r *Repo) worktreePath(worktree, p string) string {
	r.t.Helper()
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		r.t.Fatalf("gittest: path %q is not inside the repository", p)
	}
	return filepath.Join(worktree, filepath.FromSlash(p))
}

// git runs git in dir and returns its trimmed stdout; it fails the test on
// error.
func (r *Repo) git(dir string, env []string, args ...string) string {
	r.t.Helper()
	out, err := r.s.runGit(dir, env, args...)
	if err != nil {
		r.t.Fatalf("gittest: repository %s: %v", r.name, err)
	}
	return out
}

// runGit runs git with the server's environment plus env in dir and returns
// its trimmed stdout.
func (s *Server) runGit(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = s.tmp
	}
	cmd.Env = append(s.env(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Config sets a git config key of the bare repository (e.g.
// uploadpack.allowReachableSHA1InWant, which lets clients fetch a commit by
// its id); an empty value unsets it.
func (r *Repo) Config(key, value string) {
	r.t.Helper()
	if value == "" {
		if _, err := r.s.runGit(r.path, nil, "config", "--unset", key); err != nil && !strings.Contains(err.Error(), "exit status 5") {
			r.t.Fatalf("gittest: repository %s: %v", r.name, err)
		}
		return
	}
	r.git(r.path, nil, "config", key, value)
}
