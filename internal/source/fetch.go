package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

const (
	// DefaultTimeout bounds each remote call when Request.Timeout is zero.
	DefaultTimeout = 60 * time.Second

	checkoutsDir = "checkouts"
	// objectCacheSize bounds the decoded objects a fetch keeps in memory;
	// largeObjectThreshold is the size above which a blob is streamed from
	// the pack (see objectStore) instead of read into memory whole.
	objectCacheSize      = 16 * cache.MiByte
	largeObjectThreshold = 1 << 20
	tmpPrefix            = ".tmp-"
	digestSuffix         = ".digest"
)

// Request says what to fetch and how.
type Request struct {
	// URL of the repository: http(s)://, ssh://user@host:port/path,
	// scp-like git@host:path, or file://.
	URL string
	// Ref selects the commit.
	Ref Ref
	// Auth holds the credentials; nil means anonymous.
	Auth *Auth
	// Ignore holds gitignore lines; matching paths are left out of the
	// checkout and its digest.
	Ignore []string
	// Timeout bounds each remote call (listing, fetch); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxSize caps the bytes fetched (the pack the server sends) and, apart, the
	// bytes the checkout writes (files and symlink targets; a file hard-linked to the
	// previous checkout's writes none); more fail with ErrTooLarge and leave no
	// checkout behind. 0 means no limit. The objects are stored on disk while the
	// commit is checked out, so the memory a fetch takes does not grow with the
	// repository.
	MaxSize int64
	// MaxFiles caps the tree entries a checkout walks (files, directories, symlinks,
	// ignored paths); more fail with ErrTooLarge. 0 means DefaultMaxFiles.
	MaxFiles int
	// Key is the repository identity (RepositoryKey) the checkout is stored under and
	// reused for: a checkout another identity left is never reused.
	Key string
	// Current is the last artifact. When the resolved commit and the ignore
	// lines are the same and its directory still exists, nothing is fetched.
	// Its Dir may be empty: the stored checkout of its Commit is then used.
	Current *Artifact
	// Signatures asks for Artifact.Signed: the raw commit (and annotated tag) objects,
	// recorded beside the checkout so that a reused checkout has them too (one stored
	// without them is fetched again).
	Signatures bool
}

// Artifact describes a checked-out commit.
type Artifact struct {
	// Revision is "<branch or tag>@sha1:<commit>", or "sha1:<commit>" for a
	// bare commit ref. For a semver range it names the chosen tag, for the
	// default branch that branch.
	Revision string
	// Commit is the 40-hex SHA-1 of the checked-out commit.
	Commit string
	// Digest is "sha256:<64 hex>" over the checked-out files; see DirDigest.
	Digest string
	// Dir is the absolute path of the checkout. It holds only repository
	// content and must be treated as read-only: other artifacts may share
	// it, and files that did not change between commits are hard links.
	Dir string
	// Fetched is false when no objects were transferred: the commit was
	// already checked out.
	Fetched bool
	// Signed holds the objects whose signatures internal/verify checks, when
	// Request.Signatures asked for them.
	Signed *Signed
}

// Fetcher fetches commits into <storage>/checkouts. It is safe for
// concurrent use; fetches of the same commit may race and both succeed, the
// first one's directory being kept.
type Fetcher struct {
	dir  string
	opts FetcherOptions
	// http is go-git's HTTP transport over the egress guard (its transports per CA
	// bundle in a bounded cache).
	http transport.Transport
	// mu is held shared by Fetch while it looks for, publishes or reuses a
	// checkout directory, and exclusively by GC, so that GC never removes a
	// directory between the moment Fetch finds it and the moment it returns.
	mu sync.RWMutex

	// writing holds the base names of the temporary directories that
	// checkouts are being written to, which GC leaves alone whatever their
	// age. (Age alone decides for leftovers of another process.)
	writingMu sync.Mutex
	writing   map[string]bool

	// inUse counts, by base name, the Acquire calls not yet released: GC
	// keeps those checkouts. Changed under mu (shared) and inUseMu.
	inUseMu sync.Mutex
	inUse   map[string]int
}

// Fetch resolves req.Ref with one listing of the remote's refs and returns
// the checkout of the commit it points at, fetching the commit only when no
// checkout of it (with the same ignore lines) exists yet.
//
// Errors wrap ErrAuthentication, ErrRefNotFound, ErrURLInvalid or
// ErrRefInvalid where they apply; any other error is a fetch failure. Their
// text never holds a password or token.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Artifact, error) {
	a, err := f.fetch(ctx, req)
	if err != nil {
		secrets := append(req.Auth.secrets(), urlPassword(req.URL))
		return nil, withoutSecrets(err, secrets...)
	}
	return a, nil
}

func (f *Fetcher) fetch(ctx context.Context, req Request) (*Artifact, error) {
	url := redact.URL(req.URL)
	ep, err := parseURL(req.URL)
	if err != nil {
		return nil, err
	}
	if ep.Protocol == "file" && f.opts.RefuseFileURLs {
		return nil, fmt.Errorf("%w: file:// URLs are not allowed (gitsync run --allow-file-urls allows them)", ErrURLInvalid)
	}
	ref, err := req.Ref.normalise()
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if req.Auth != nil && len(req.Auth.CA) > 0 {
		ep.CaBundle = req.Auth.CA
	}
	if ep.Protocol == "ssh" {
		// go-git's SSH transport dials through a proxy URL only: the guard's.
		ep.Proxy.URL = f.opts.Egress.ProxyURL()
	}
	auth, err := transportAuth(ep, req.Auth, f.dir, timeout)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}

	rem, err := openRemote(ctx, f.transportFor(ep), ep, auth, timeout)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", url, classify(err))
	}
	defer rem.close()
	adv, err := rem.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing refs of %s: %w", url, classify(err))
	}
	t, err := resolve(newRemoteRefs(adv), ref)
	if err != nil {
		return nil, fmt.Errorf("resolving %s in %s: %w", ref, url, err)
	}
	resolved := t // before the fetch narrows want to a commit below a tip

	ignore := normaliseIgnore(req.Ignore)
	if cur := req.Current; cur != nil && cur.Dir == "" && isFullHash(cur.Commit) {
		// A caller that keeps only the revision (a status field) gets the checkout
		// of that commit with these ignore lines, if it is still stored.
		c := *cur
		c.Dir = filepath.Join(f.dir, DirName(req.Key, c.Commit, ignore))
		req.Current = &c
	}
	if a, err := f.reuse(req.Current, req.Key, t, ignore, req.Signatures); a != nil || err != nil {
		return a, err
	}

	if t.depth == 0 && t.name == "" && canFetchByID(adv.Capabilities) {
		// A bare commit below the default branch's tip: ask for it alone,
		// shallow, instead of the branch's whole history. The server only
		// serves commits reachable from its refs.
		t.want, t.depth = t.commit, 1
	}
	objects := &objectStore{f: f}
	defer objects.close()
	if t.depth == 0 && t.name != "" && canCheckAncestry(adv.Capabilities) {
		// A commit below a branch's tip: check with the branch's commits only
		// that it is in the branch, then fetch it alone, in a new session.
		st, err := objects.onDisk()
		if err != nil {
			return nil, err
		}
		if err := inBranch(ctx, rem, st, t, req.MaxSize); err != nil {
			return nil, fmt.Errorf("fetching %s from %s: %w", ref, url, classify(err))
		}
		if rem, err = openRemote(ctx, f.transportFor(ep), ep, auth, timeout); err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", url, classify(err))
		}
		defer rem.close()
		if _, err := rem.list(ctx); err != nil {
			return nil, fmt.Errorf("listing refs of %s: %w", url, classify(err))
		}
		t.want, t.depth = t.commit, 1
	}
	if err := rem.fetchInto(ctx, t.want, t.depth, "", req.MaxSize, objects.pick); err != nil {
		if t.want == t.commit && t.depth == 1 && isNotOurRef(err) {
			err = fmt.Errorf("%w: commit %s: %w", ErrRefNotFound, t.commit, err)
		}
		return nil, fmt.Errorf("fetching %s from %s: %w", ref, url, classify(err))
	}
	commit, err := t.checkoutCommit(objects.st)
	if err != nil {
		return nil, fmt.Errorf("fetching %s from %s: %w", ref, url, err)
	}
	if commit.Hash != t.commit {
		// A tag whose peeled commit was not advertised: now it is known.
		t.commit = commit.Hash
		if !req.Signatures {
			if a, err := f.reuse(nil, req.Key, t, ignore, false); a != nil || err != nil {
				return a, err
			}
		}
	}
	var signed *Signed
	if req.Signatures {
		if signed, err = signedObjects(objects.st, resolved.want, commit.Hash); err != nil {
			return nil, fmt.Errorf("fetching %s from %s: %w", ref, url, err)
		}
		if a, err := f.reuse(nil, req.Key, t, ignore, false); a != nil || err != nil {
			return f.withSigned(a, err, signed, req.Key, ignore)
		}
	}
	var prior map[blobKey]priorFile
	if req.Current != nil {
		prior = f.priorFiles(req.Current.Dir)
	}
	a, err := f.checkout(objects.st, commit, req.Key, t, ignore, prior, newCheckoutLimits(req.MaxFiles, req.MaxSize))
	if err != nil {
		return nil, fmt.Errorf("checking out %s of %s: %w", t.revision(), url, err)
	}
	if signed != nil {
		return f.withSigned(a, nil, signed, req.Key, ignore)
	}
	return a, nil
}

// checkoutCommit finds the commit to check out among the fetched objects.
func (t target) checkoutCommit(st storer.EncodedObjectStorer) (*object.Commit, error) {
	if t.want == t.commit || t.depth == 1 {
		return peelToCommit(st, t.want)
	}
	// A commit below a branch tip: the branch's whole history was fetched,
	// so the commit is there if and only if the branch contains it.
	c, err := object.GetCommit(st, t.commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		in := "the default branch"
		if t.name != "" {
			in = fmt.Sprintf("branch %q", t.name)
		}
		return nil, fmt.Errorf("%w: commit %s is not in %s", ErrRefNotFound, t.commit, in)
	}
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", t.commit, err)
	}
	return c, nil
}

// reuse returns an artifact without fetching when the commit's checkout for this
// repository key exists: the caller's current one, or one an earlier fetch with the same
// key left in the storage. It returns nil, nil when a fetch is needed.
//
// With signatures, the checkout is reused only when its signed objects are recorded
// (see Request.Signatures).
func (f *Fetcher) reuse(cur *Artifact, key string, t target, ignore []string, signatures bool) (*Artifact, error) {
	name := DirName(key, t.commit.String(), ignore)
	dir := filepath.Join(f.dir, name)

	f.mu.RLock()
	defer f.mu.RUnlock()
	if !isDir(dir) {
		return nil, nil
	}
	var signed *Signed
	if signatures {
		if signed = f.readSigned(name, t); signed == nil {
			return nil, nil
		}
	}
	if cur != nil && cur.Commit == t.commit.String() && filepath.Clean(cur.Dir) == dir && validDigest(cur.Digest) {
		a := *cur
		a.Revision = t.revision()
		a.Fetched = false
		a.Signed = signed
		return &a, nil
	}
	digest, err := f.storedDigest(name)
	if err != nil {
		return nil, err
	}
	return &Artifact{Revision: t.revision(), Commit: t.commit.String(), Digest: digest, Dir: dir, Signed: signed}, nil
}

// checkout writes the commit into a temporary directory and renames it into
// place. If another Fetch published the same directory meanwhile, that one
// is kept and the temporary one removed.
func (f *Fetcher) checkout(st storer.EncodedObjectStorer, commit *object.Commit, key string, t target, ignore []string,
	prior map[blobKey]priorFile, limits *checkoutLimits) (*Artifact, error) {
	tmp, err := os.MkdirTemp(f.dir, tmpPrefix+"checkout-*")
	if err != nil {
		return nil, err
	}
	f.setWriting(tmp, true)
	defer f.setWriting(tmp, false)
	published := false
	defer func() {
		if !published {
			_ = os.RemoveAll(tmp)
		}
	}()
	files, err := writeTree(st, commit, tmp, newIgnoreMatcher(ignore), prior, limits)
	if err != nil {
		return nil, err
	}
	digest := files.digest()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}

	name := DirName(key, commit.Hash.String(), ignore)
	final := filepath.Join(f.dir, name)
	a := &Artifact{Revision: t.revision(), Commit: commit.Hash.String(), Digest: digest, Dir: final, Fetched: true}

	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := os.Rename(tmp, final); err != nil {
		if isDir(final) {
			// Lost a race with another Fetch of the same commit: same
			// content, same digest.
			return a, nil
		}
		return nil, fmt.Errorf("publishing checkout: %w", err)
	}
	published = true
	if err := f.writeMeta(name, digest, files.files); err != nil {
		return nil, err
	}
	return a, nil
}
