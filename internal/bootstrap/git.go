package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Author is the name and e-mail of bootstrap's commits.
var Author = object.Signature{Name: "gitsync", Email: "bootstrap@gitsync.dev"}

// remote is the repository bootstrap commits to.
type remote struct {
	url    string
	branch plumbing.ReferenceName
	auth   transport.AuthMethod
	ca     []byte
}

func newRemote(o Options) (*remote, error) {
	auth, err := source.AuthMethod(o.URL, o.Auth, o.timeout())
	if err != nil {
		return nil, err
	}
	r := &remote{url: o.URL, branch: plumbing.NewBranchReferenceName(o.Branch), auth: auth}
	if o.Auth != nil {
		r.ca = o.Auth.CA
	}
	return r, nil
}

// hasBranch lists the remote's references: false when it is empty or lacks the branch.
func (r *remote) hasBranch(ctx context.Context) (bool, error) {
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: r.auth, CABundle: r.ca})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listing the references of %s: %w", redact.URL(r.url), err)
	}
	for _, ref := range refs {
		if ref.Name() == r.branch {
			return true, nil
		}
	}
	return false, nil
}

// open clones the branch into dir, or starts a repository whose first commit will
// create the branch when the remote does not have it yet.
func (r *remote) open(ctx context.Context, dir string) (*git.Repository, error) {
	exists, err := r.hasBranch(ctx)
	if err != nil {
		return nil, err
	}
	if exists {
		repo, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
			URL: r.url, Auth: r.auth, CABundle: r.ca, ReferenceName: r.branch, SingleBranch: true, Tags: git.NoTags,
		})
		if err != nil {
			return nil, fmt.Errorf("cloning %s: %w", redact.URL(r.url), err)
		}
		return repo, nil
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.url}}); err != nil {
		return nil, err
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, r.branch)); err != nil {
		return nil, err
	}
	return repo, nil
}

// commitAndPush writes files (slash-separated paths in the repository -> content) into
// the branch and, when any differs from what the branch holds, commits them with
// message (a first commit gets firstMessage) and pushes. It returns the new commit, or
// "" when the branch already held every file as given.
func (r *remote) commitAndPush(ctx context.Context, files map[string][]byte, message, firstMessage string) (string, error) {
	dir, err := os.MkdirTemp("", "gitsync-bootstrap-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	repo, err := r.open(ctx, dir)
	if err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	// Through os.Root: a symlink in the clone cannot make a write land outside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	changed, existed := false, false
	for _, name := range names {
		old, err := root.ReadFile(name)
		switch {
		case err == nil:
			existed = true
			if bytes.Equal(old, files[name]) {
				continue
			}
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("reading %s: %w", name, err)
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
		if err := root.WriteFile(name, files[name], 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
		if _, err := wt.Add(name); err != nil {
			return "", fmt.Errorf("adding %s: %w", name, err)
		}
		changed = true
	}
	if !changed {
		return "", nil
	}
	if !existed {
		message = firstMessage
	}
	sig := Author
	sig.When = time.Now()
	hash, err := wt.Commit(message, &git.CommitOptions{Author: &sig, Committer: &sig})
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	spec := gitconfig.RefSpec(r.branch.String() + ":" + r.branch.String())
	err = repo.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName, RefSpecs: []gitconfig.RefSpec{spec}, Auth: r.auth, CABundle: r.ca,
	})
	if err != nil {
		return "", fmt.Errorf("pushing to %s %s: %w", redact.URL(r.url), r.branch.Short(), err)
	}
	return hash.String(), nil
}
