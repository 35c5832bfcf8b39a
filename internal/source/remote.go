package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// remote is one upload-pack session with a repository. The ref listing and
// the fetch that may follow share it, so a poll that finds a new commit costs
// one listing and one fetch (over SSH: one connection), where go-git's
// Remote.List followed by Remote.Fetch would list the refs twice.
type remote struct {
	sess    transport.UploadPackSession
	adv     *packp.AdvRefs
	timeout time.Duration
}

// openRemote starts a session. Over SSH this dials and authenticates, which
// go-git does without a context, so it runs in a goroutine bounded by the
// timeout; a session that completes after the caller gave up is closed.
// cl is the transport to use; nil: go-git's for the endpoint's protocol.
func openRemote(ctx context.Context, cl transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod, timeout time.Duration) (*remote, error) {
	if cl == nil {
		var err error
		if cl, err = client.NewClient(ep); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrURLInvalid, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type result struct {
		sess transport.UploadPackSession
		err  error
	}
	done := make(chan result, 1)
	go func() {
		sess, err := cl.NewUploadPackSession(ep, auth)
		done <- result{sess, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		return &remote{sess: res.sess, timeout: timeout}, nil
	case <-ctx.Done():
		go func() {
			// go-git returns a typed nil session with its errors.
			if res := <-done; res.err == nil {
				_ = res.sess.Close()
			}
		}()
		return nil, fmt.Errorf("no session within %s: %w", timeout, context.Cause(ctx))
	}
}

// close ends the session; for SSH and file it stops the upload-pack process.
func (r *remote) close() {
	_ = r.sess.Close()
}

// list reads the references that the server advertises.
func (r *remote) list(ctx context.Context) (*packp.AdvRefs, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	adv, err := r.sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, withContextCause(ctx, err)
	}
	r.adv = adv
	return adv, nil
}

// fetchFiltered asks for want (a commit or an annotated tag) and the history
// below it down to depth commits (0: all of it), with a partial-clone filter
// ("": none; else the server must support capability.Filter), and writes the
// pack into st. More than maxSize bytes of pack (0: no limit) fail with
// ErrTooLarge. No haves are sent: the result is self-contained.
func (r *remote) fetchFiltered(ctx context.Context, st storer.Storer, want plumbing.Hash, depth int,
	filter packp.Filter, maxSize int64) error {
	return r.fetchInto(ctx, want, depth, filter, maxSize, func(pack io.Reader) (storer.Storer, io.Reader, error) {
		return st, pack, nil
	})
}

// fetchInto is fetchFiltered into the storage that into picks once the pack starts
// to arrive: into may read the pack's first bytes, and returns the storage and the
// whole pack (those bytes included).
func (r *remote) fetchInto(ctx context.Context, want plumbing.Hash, depth int, filter packp.Filter, maxSize int64,
	into func(pack io.Reader) (storer.Storer, io.Reader, error)) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	caps := r.adv.Capabilities
	req := packp.NewUploadPackRequestFromCapabilities(caps)
	// Thin packs may hold deltas against objects the client claims to have;
	// this client has none, so ask for a complete pack.
	req.Capabilities.Delete(capability.ThinPack)
	if caps.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	if depth > 0 && caps.Supports(capability.Shallow) {
		req.Depth = packp.DepthCommits(depth)
		_ = req.Capabilities.Set(capability.Shallow)
	}
	if filter != "" {
		_ = req.Capabilities.Set(capability.Filter)
		req.Filter = filter
	}
	req.Wants = []plumbing.Hash{want}

	resp, err := r.sess.UploadPack(ctx, req)
	if err != nil {
		return withContextCause(ctx, err)
	}
	defer resp.Close()

	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	limited := &sizeLimit{r: pack, max: maxSize}
	st, whole, err := into(limited)
	if err == nil {
		err = packfile.UpdateObjectStorage(st, whole)
	}
	if err != nil {
		if limited.exceeded {
			return limited.err()
		}
		return withContextCause(ctx, fmt.Errorf("reading pack: %w", err))
	}
	return nil
}

// canFetchByID reports whether the server lets a client ask for any commit
// reachable from its refs, not only for the commits its refs point at
// (git's uploadpack.allowReachableSHA1InWant or allowAnySHA1InWant; GitHub,
// GitLab and Gitea allow it).
func canFetchByID(caps *capability.List) bool {
	return caps.Supports(capability.AllowReachableSHA1InWant)
}

// sizeLimit fails a read once more than max bytes (0: no limit) were read.
type sizeLimit struct {
	r        io.Reader
	max, n   int64
	exceeded bool
}

func (l *sizeLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.max > 0 && l.n > l.max {
		l.exceeded = true
		return n, l.err()
	}
	return n, err
}

func (l *sizeLimit) err() error {
	return fmt.Errorf("%w: more than the size limit of %d bytes to fetch (spec.maxSize)", ErrTooLarge, l.max)
}

// withContextCause makes a deadline or cancellation visible to errors.Is even
// when the transport reported it as a plain read error.
func withContextCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, cause)
}
