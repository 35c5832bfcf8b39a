package source

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gitsync-dev/gitsync/internal/redact"
)

// Sentinel errors that callers classify with errors.Is. Errors returned by
// this package wrap at most one of them; an error that wraps none is a fetch
// failure (network, server, timeout) that a retry may fix.
var (
	// ErrAuthentication means that the credentials were missing, wrong or
	// refused, or that the server's SSH host key was not trusted.
	ErrAuthentication = errors.New("authentication failed")
	// ErrRefNotFound means that the requested branch, tag, semver range or
	// commit does not exist on the remote.
	ErrRefNotFound = errors.New("reference not found")
	// ErrURLInvalid means that the repository URL cannot be parsed or uses a
	// scheme that is not supported.
	ErrURLInvalid = errors.New("invalid repository url")
	// ErrRefInvalid means that the Ref itself is malformed: several of
	// branch/tag/semver at once, a commit that is not 40 hex digits, or a
	// semver range that does not parse.
	ErrRefInvalid = errors.New("invalid reference")
	// ErrTooLarge means that the objects to fetch exceed Request.MaxSize, or that the
	// checkout would write more than Request.MaxSize bytes or walk more than
	// Request.MaxFiles tree entries.
	ErrTooLarge = errors.New("repository too large")
)

// classify wraps an error of a remote call with the sentinel that describes
// it, if any. Errors that already carry a sentinel are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{ErrAuthentication, ErrRefNotFound, ErrURLInvalid, ErrRefInvalid, ErrTooLarge} {
		if errors.Is(err, s) {
			return err
		}
	}
	switch {
	case isAuthError(err):
		return &classified{sentinel: ErrAuthentication, err: err}
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return &classified{sentinel: ErrRefNotFound, err: err}
	case errors.Is(err, transport.ErrRepositoryNotFound):
		// go-git appends the server's (often empty) explanation.
		return &relabeled{msg: "repository not found", err: err}
	}
	return err
}

func isAuthError(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) ||
		errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrInvalidAuthMethod) {
		return true
	}
	var keyErr *knownhosts.KeyError
	var revokedErr *knownhosts.RevokedError
	if errors.As(err, &keyErr) || errors.As(err, &revokedErr) {
		return true
	}
	// x/crypto/ssh reports refused credentials and failed key exchanges as
	// plain text wrapped in "ssh: handshake failed". A connection that the
	// server closed mid-handshake (EOF) is a transport failure, not a refusal.
	msg := err.Error()
	if strings.Contains(msg, "ssh: unable to authenticate") {
		return true
	}
	if strings.Contains(msg, "ssh: handshake failed") &&
		!errors.Is(err, io.EOF) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return true
	}
	return false
}

// classified attaches a sentinel to an error without changing its text.
type classified struct {
	sentinel error
	err      error
}

func (c *classified) Error() string   { return c.sentinel.Error() + ": " + c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.sentinel, c.err} }

// relabeled replaces the text of the error it wraps (to hide secret values or
// noise) while keeping errors.Is and errors.As working on the chain.
type relabeled struct {
	msg string
	err error
}

func (r *relabeled) Error() string { return r.msg }
func (r *relabeled) Unwrap() error { return r.err }

// withoutSecrets replaces every non-empty secret in err's text with "***" (redact.Values),
// keeping err's chain for errors.Is.
func withoutSecrets(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := redact.Values(msg, secrets...)
	if clean == msg {
		return err
	}
	return &relabeled{msg: clean, err: err}
}
