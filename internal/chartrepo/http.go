package chartrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gitsync-dev/gitsync/internal/redact"
)

// StatusError is an HTTP answer other than success from a repository.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %d %s", redact.URL(e.URL), e.Code, http.StatusText(e.Code))
}

// IsUnauthorized tells whether err is a repository refusing the credentials.
func IsUnauthorized(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden)
}

// ErrTooLarge is a download over its cap.
var ErrTooLarge = errors.New("too large")

// ErrDigestMismatch is an archive whose digest is not the one the index states.
var ErrDigestMismatch = errors.New("digest mismatch")

// DefaultTimeout bounds a repository's requests when its Source says nothing.
const DefaultTimeout = 60 * time.Second

// ErrTimeout is a repository that did not answer (the whole answer, body included)
// within its timeout: one that accepts the connection and then stalls or trickles.
var ErrTimeout = errors.New("timed out")

// timeoutOf is how long one poll or download of src may take: src.Timeout (DefaultTimeout
// when zero) within Options.MaxTimeout.
func (s *Store) timeoutOf(src Source) time.Duration {
	d := src.Timeout
	if d <= 0 {
		d = DefaultTimeout
	}
	if s.opts.MaxTimeout > 0 && d > s.opts.MaxTimeout {
		d = s.opts.MaxTimeout
	}
	return d
}

// timedOut turns err into an ErrTimeout naming d when ctx's deadline (or a client or
// transport timeout) ended the request; other errors pass as they are.
func timedOut(ctx context.Context, d time.Duration, err error) error {
	if err == nil || errors.Is(err, ErrTimeout) {
		return err
	}
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w after %s: %w", ErrTimeout, d, err)
	}
	return err
}

// get sends a GET; credentials go only to the repository's own scheme and host.
func (s *Store) get(ctx context.Context, src Source, target string, header http.Header) (*http.Response, error) {
	t, err := s.transport(src)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if src.Username != "" || src.Password != "" {
		if base, err := url.Parse(src.URL); err == nil && base.Scheme == req.URL.Scheme && base.Host == req.URL.Host {
			req.SetBasicAuth(src.Username, src.Password)
		}
	}
	resp, err := s.client(t, s.timeoutOf(src)).Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(target), unwrapURLError(err))
	}
	return resp, nil
}

// unwrapURLError drops net/url's repetition of the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Poll is the result of polling a repository.
type Poll struct {
	// Digest is the sha256 of the index now in hand.
	Digest string
	// Bytes is what was downloaded (0 when nothing changed).
	Bytes int64
}

// PollIndex fetches src's index.yaml unless the server says (ETag) it did not change
// since the index whose digest is previous. The index is validated before it is kept.
func (s *Store) PollIndex(ctx context.Context, src Source, previous string) (Poll, error) {
	timeout := s.timeoutOf(src)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	poll, err := s.pollIndex(ctx, src, previous)
	return poll, timedOut(ctx, timeout, err)
}

func (s *Store) pollIndex(ctx context.Context, src Source, previous string) (Poll, error) {
	target := strings.TrimSuffix(src.URL, "/") + "/index.yaml"
	header := http.Header{}
	if previous != "" {
		if _, err := os.Stat(s.indexPath(previous)); err == nil {
			if etag, err := os.ReadFile(s.etagPath(previous)); err == nil && len(etag) > 0 {
				header.Set("If-None-Match", string(etag))
			}
		}
	}
	resp, err := s.get(ctx, src, target, header)
	if err != nil {
		return Poll{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && header.Get("If-None-Match") != "":
		return Poll{Digest: previous}, nil
	case resp.StatusCode != http.StatusOK:
		return Poll{}, &StatusError{URL: target, Code: resp.StatusCode}
	}
	max := s.opts.MaxIndexSize
	if resp.ContentLength > max {
		return Poll{}, fmt.Errorf("%s has %d bytes, more than %d: %w", redact.URL(target), resp.ContentLength, max, ErrTooLarge)
	}
	// Streamed to disk, and no further than the cap: a server that sends more (without
	// a Content-Length, or lying about it) is cut off there.
	tmp, n, digest, err := s.download(resp.Body, max, "index", "reading "+redact.URL(target))
	if err != nil {
		return Poll{}, err
	}
	defer os.Remove(tmp)
	if n > max {
		return Poll{}, fmt.Errorf("%s is larger than %d bytes: %w", redact.URL(target), max, ErrTooLarge)
	}
	if err := s.storeIndexFile(tmp, digest, target); err != nil {
		return Poll{}, err
	}
	if etag := resp.Header.Get("ETag"); etag != "" {
		_ = os.WriteFile(s.etagPath(digest), []byte(etag), 0o644)
	}
	return Poll{Digest: digest, Bytes: n}, nil
}

func (s *Store) etagPath(digest string) string {
	return strings.TrimSuffix(s.indexPath(digest), ".yaml") + ".etag"
}

// fetchHTTP downloads the archive at target (relative to the repository URL) and
// checks it against want (a sha256 hex digest from the index; empty: not checked).
func (s *Store) fetchHTTP(ctx context.Context, src Source, ref, want string) (string, int64, error) {
	base, err := url.Parse(strings.TrimSuffix(src.URL, "/") + "/")
	if err != nil {
		return "", 0, fmt.Errorf("repository URL: %w", err)
	}
	u, err := base.Parse(ref)
	if err != nil {
		return "", 0, fmt.Errorf("chart URL %q: %w", ref, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", 0, fmt.Errorf("chart URL %s: only http(s) URLs are fetched", redact.URL(u.String()))
	}
	// No shortcut through an archive of the same digest that another repository identity
	// stored: this one downloads it once itself (Fetch found no record of its own), which
	// proves the repository serves it to these credentials.
	resp, err := s.get(ctx, src, u.String(), nil)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", 0, &StatusError{URL: u.String(), Code: resp.StatusCode}
	}
	return s.storeChart(resp.Body, resp.ContentLength, want, redact.URL(u.String()))
}

// storeChart writes an archive of at most MaxChartSize bytes to the cache and returns its
// path; want, when set, is the sha256 it must have.
func (s *Store) storeChart(r io.Reader, size int64, want, what string) (string, int64, error) {
	if size > MaxChartSize {
		return "", 0, fmt.Errorf("chart archive %s is larger than the %d bytes allowed (%d bytes): %w", what, MaxChartSize, size, ErrTooLarge)
	}
	tmp, err := os.CreateTemp(s.dirOf("charts"), ".dl-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, MaxChartSize+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, fmt.Errorf("downloading %s: %w", what, err)
	}
	if n > MaxChartSize {
		return "", n, fmt.Errorf("chart archive %s is larger than the %d bytes allowed: %w", what, MaxChartSize, ErrTooLarge)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if want != "" && !strings.EqualFold(hexOf(want), got) {
		return "", n, fmt.Errorf("chart archive %s has digest sha256:%s, the index says sha256:%s: %w", what, got, hexOf(want), ErrDigestMismatch)
	}
	path := s.chartPath(got)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", n, err
	}
	return path, n, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
