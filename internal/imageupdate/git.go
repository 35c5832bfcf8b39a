package imageupdate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// DefaultAttempts is how many times a push that lost a race (the branch moved) is tried,
// each time on a fresh checkout of the new head.
const DefaultAttempts = 3

// Request is one run of an automation.
type Request struct {
	// URL and Auth of the GitRepository (its own Secret's credentials).
	URL  string
	Auth *source.Auth
	// Egress guards every address dialled (nil: none).
	Egress *egress.Guard
	// Timeout bounds the whole run.
	Timeout time.Duration
	// MaxBytes bounds what the run reads from an http(s) remote in all (0: no limit).
	MaxBytes int64
	// CheckoutBranch is the branch to update; PushBranch where to push ("" : the same).
	// When PushBranch differs and exists, the run starts from it, so that updates pile up
	// on the review branch.
	CheckoutBranch, PushBranch string
	// PushRefspec, when set, is pushed as well (Flux's push.refspec).
	PushRefspec string
	// Path is update.path in the repository.
	Path string
	// Values are the policies' images by NS:NAME.
	Values Values
	// AuthorName and AuthorEmail sign the commit's author and committer lines.
	AuthorName, AuthorEmail string
	// MessageTemplate renders the commit message.
	MessageTemplate string
	// Signer signs the commit (nil: unsigned).
	Signer git.Signer
	// Automation is the automation's namespace/name, for the message.
	Automation string
	// WorkDir holds the run's temporary clone ("": the system's).
	WorkDir string
	// Attempts bounds the pushes tried (0: DefaultAttempts).
	Attempts int
	// Now is the commit time (zero: time.Now).
	Now time.Time
}

// Result is what a run did.
type Result struct {
	// Commit pushed; "" when nothing changed (nothing pushed).
	Commit string
	// Branch pushed to.
	Branch string
	// Changes made (in the last attempt).
	Changes []Change
	// Attempts made.
	Attempts int
}

// beforePush, when set (tests only), runs before each push with the attempt's number.
var beforePush func(attempt int)

// Run clones the branch, rewrites the marked fields under Path, and when anything
// changed commits and pushes; a push rejected because the branch moved meanwhile is
// retried on the new head, at most Attempts times.
func Run(ctx context.Context, req Request) (*Result, error) {
	if req.CheckoutBranch == "" {
		return nil, errors.New("no branch to check out: set git.checkout.ref.branch or the GitRepository's spec.ref.branch")
	}
	if req.PushBranch == "" {
		req.PushBranch = req.CheckoutBranch
	}
	if req.Attempts <= 0 {
		req.Attempts = DefaultAttempts
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	auth, err := source.AuthMethod(req.URL, req.Auth, req.Timeout)
	if err != nil {
		return nil, err
	}
	r := &run{req: req, auth: auth}
	if isHTTP(req.URL) { // SSH dials through the guard's proxy (proxyFor)
		r.auth = guardedHTTP(req.Egress, auth, req.MaxBytes)
	}
	if req.Auth != nil {
		r.ca = req.Auth.CA
	}
	if req.Egress != nil {
		r.proxy = transport.ProxyOptions{URL: req.Egress.ProxyURL()}
	}
	var lastErr error
	for attempt := 1; attempt <= req.Attempts; attempt++ {
		res, err := r.once(ctx, attempt)
		if err == nil {
			res.Attempts = attempt
			return res, nil
		}
		if !errors.Is(err, errMoved) {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("pushing to %s: the branch kept moving (%d attempts): %w", req.PushBranch, req.Attempts, lastErr)
}

// errMoved: the push was refused because the branch moved.
var errMoved = errors.New("the branch moved during the update")

type run struct {
	req   Request
	auth  transport.AuthMethod
	ca    []byte
	proxy transport.ProxyOptions
}

// proxyFor is the egress proxy of SSH URLs (http(s) goes through the guarded auth).
func (r *run) proxyFor() transport.ProxyOptions {
	if isHTTP(r.req.URL) {
		return transport.ProxyOptions{}
	}
	return r.proxy
}

// startBranch is the branch the run starts from: the push branch when it differs from
// the checkout branch and exists, else the checkout branch.
func (r *run) startBranch(ctx context.Context) (string, error) {
	if r.req.PushBranch == r.req.CheckoutBranch {
		return r.req.CheckoutBranch, nil
	}
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.req.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: r.auth, CABundle: r.ca, ProxyOptions: r.proxyFor()})
	if err != nil {
		return "", fmt.Errorf("listing the references of %s: %w", redact.URL(r.req.URL), err)
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName(r.req.PushBranch) {
			return r.req.PushBranch, nil
		}
	}
	return r.req.CheckoutBranch, nil
}

func (r *run) once(ctx context.Context, attempt int) (*Result, error) {
	dir, err := os.MkdirTemp(r.req.WorkDir, "imageupdate-")
	if err != nil {
		return nil, fmt.Errorf("creating the work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	start, err := r.startBranch(ctx)
	if err != nil {
		return nil, err
	}
	branch := plumbing.NewBranchReferenceName(start)
	repo, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL: r.req.URL, Auth: r.auth, CABundle: r.ca, ProxyOptions: r.proxyFor(),
		ReferenceName: branch, SingleBranch: true, Tags: git.NoTags,
	})
	if err != nil {
		return nil, fmt.Errorf("cloning %s %s: %w", redact.URL(r.req.URL), start, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	changes, err := updateTree(root, r.req.Path, r.req.Values)
	if err != nil {
		return nil, err
	}
	res := &Result{Branch: r.req.PushBranch, Changes: changes}
	if len(changes) == 0 {
		return res, nil
	}
	hash, err := r.commit(repo, changes)
	if err != nil {
		return nil, err
	}
	if beforePush != nil {
		beforePush(attempt)
	}
	specs := []gitconfig.RefSpec{gitconfig.RefSpec(branch.String() + ":" + plumbing.NewBranchReferenceName(r.req.PushBranch).String())}
	if r.req.PushRefspec != "" {
		spec := gitconfig.RefSpec(r.req.PushRefspec)
		if err := spec.Validate(); err != nil || spec.IsForceUpdate() {
			return nil, fmt.Errorf("push.refspec %q is not a plain (non-forced) refspec", r.req.PushRefspec)
		}
		specs = append(specs, spec)
	}
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: git.DefaultRemoteName, RefSpecs: specs,
		Auth: r.auth, CABundle: r.ca, ProxyOptions: r.proxyFor()})
	if err != nil {
		if moved(err) {
			return nil, fmt.Errorf("%w: %v", errMoved, err)
		}
		return nil, fmt.Errorf("pushing to %s %s: %w", redact.URL(r.req.URL), r.req.PushBranch, err)
	}
	res.Commit = hash.String()
	return res, nil
}

func (r *run) commit(repo *git.Repository, changes []Change) (plumbing.Hash, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.File] {
			continue
		}
		seen[c.File] = true
		if _, err := wt.Add(c.File); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("adding %s: %w", c.File, err)
		}
	}
	msg, err := Message(r.req.MessageTemplate, r.req.Automation, changes, r.req.Values)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	when := r.req.Now
	if when.IsZero() {
		when = time.Now()
	}
	sig := &object.Signature{Name: r.req.AuthorName, Email: r.req.AuthorEmail, When: when}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, Signer: r.req.Signer})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("committing: %w", err)
	}
	return hash, nil
}

// moved says whether a push failed because the branch is no longer where the clone
// found it: go-git's own check before sending ("non-fast-forward update: <ref>",
// ErrForceNeeded) or the server's refusal of the ref update ("command error on <ref>:
// fetch first", "… failed to update ref", "… non-fast-forward").
func moved(err error) bool {
	msg := err.Error()
	return errors.Is(err, git.ErrForceNeeded) || errors.Is(err, git.ErrNonFastForwardUpdate) ||
		strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "command error on")
}

func isHTTP(url string) bool {
	return strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}
