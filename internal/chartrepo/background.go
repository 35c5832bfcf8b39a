package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInProgress is a download that goes on in the background after the caller stopped
// waiting for it (FetchWithin): ask again later.
var ErrInProgress = errors.New("still downloading")

const (
	// MaxDownloadsPerTenant is how many background downloads of one tenant (Source.Tenant)
	// run at once; more wait (ErrInProgress) without a connection or a file of their own.
	MaxDownloadsPerTenant = 4
	// keptOutcome is how long the failure of a download nobody waited for to the end is
	// kept for the next caller.
	keptOutcome = 5 * time.Minute
)

// download is one background Fetch or Poll; done is closed when path (or the index's
// digest), n and err are set.
type download struct {
	done   chan struct{}
	tenant string
	path   string
	n      int64
	err    error
	ended  time.Time
}

// FetchWithin is Fetch for a caller that must not be held by a slow repository (an
// Application's worker): the download runs in the background, under the Source's own
// timeout, one per repository identity and chart version at a time and at most
// MaxDownloadsPerTenant per tenant, and FetchWithin waits at most wait (or until ctx
// ends) for a download it started. When it is not done by then the error is
// ErrInProgress; a later call for the same identity and version joins the download
// without waiting (ErrInProgress while it goes on) or, once it ended, gets its outcome (a
// failure once; the call after that downloads again).
func (s *Store) FetchWithin(ctx context.Context, src Source, cv *ChartVersion, wait time.Duration) (string, int64, error) {
	if len(cv.URLs) == 0 {
		return "", 0, fmt.Errorf("chart %s %s has no URL in the index", cv.Name, cv.Version)
	}
	if path, ok := s.CachedVersion(src.cacheKey(), cv); ok {
		return path, 0, nil
	}
	key := strings.Join([]string{"fetch", src.cacheKey(), cv.Name, cv.Version}, "\x00")
	what := fmt.Sprintf("chart %s %s", cv.Name, cv.Version)
	return s.within(ctx, key, what, src, wait, true, func() (string, int64, error) {
		return s.Fetch(context.Background(), src, cv)
	})
}

// PollWithin is Poll (without a previous index; for oci:// the tags of chart) in the
// background as FetchWithin downloads: it returns the index's digest, or ErrInProgress
// after wait, and a later call takes the outcome.
func (s *Store) PollWithin(ctx context.Context, src Source, chart string, wait time.Duration) (Poll, error) {
	key := strings.Join([]string{"poll", src.cacheKey(), chart}, "\x00")
	what := "the index of " + src.URL
	if IsOCI(src.URL) {
		what = "the tags of " + strings.TrimSuffix(src.URL, "/") + "/" + chart
	}
	digest, n, err := s.within(ctx, key, what, src, wait, false, func() (string, int64, error) {
		poll, err := s.Poll(context.Background(), src, "", []string{chart})
		return poll.Digest, poll.Bytes, err
	})
	return Poll{Digest: digest, Bytes: n}, err
}

// within runs fn in the background as the download of key (joining the one under way, or
// taking the outcome of the one that ended) and waits at most wait for a download it
// started, not at all for one under way. A success is forgotten at once when cached (the
// store answers from then on), else once taken.
func (s *Store) within(ctx context.Context, key, what string, src Source, wait time.Duration, cached bool, fn func() (string, int64, error)) (string, int64, error) {
	d, started, err := s.startDownload(key, what, src, cached, fn)
	if err != nil {
		return "", 0, err
	}
	if !started {
		// A download under way had its caller's wait already: joining it costs no more
		// (many Applications of one slow chart, or one looking again and again, hold no
		// worker).
		wait = 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-d.done:
		s.takeOutcome(key, d)
		return d.path, d.n, d.err
	default:
	}
	select {
	case <-d.done:
		s.takeOutcome(key, d)
		return d.path, d.n, d.err
	case <-timer.C:
		return "", 0, fmt.Errorf("%s: %w (for up to %s)", what, ErrInProgress, s.timeoutOf(src))
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// startDownload returns the download of key: the one under way or ended and not taken
// yet, else a new one running fn (started), unless the tenant has MaxDownloadsPerTenant
// under way.
func (s *Store) startDownload(key, what string, src Source, cached bool, fn func() (string, int64, error)) (d *download, started bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	running := 0
	for k, d := range s.downloads {
		switch {
		case d.ended.IsZero():
			if d.tenant == src.Tenant {
				running++
			}
		case now.Sub(d.ended) > keptOutcome:
			delete(s.downloads, k)
		}
	}
	if d, ok := s.downloads[key]; ok {
		return d, false, nil
	}
	if running >= MaxDownloadsPerTenant {
		return nil, false, fmt.Errorf("%s: %w: waiting for %d other downloads of the same namespace", what, ErrInProgress, running)
	}
	d = &download{done: make(chan struct{}), tenant: src.Tenant}
	s.downloads[key] = d
	go func() {
		// Not the caller's context: the download outlives the wait, bounded by the
		// Source's timeout (Fetch, Poll).
		path, n, err := fn()
		s.mu.Lock()
		d.path, d.n, d.err, d.ended = path, n, err, time.Now()
		if err == nil && cached {
			delete(s.downloads, key)
		}
		s.mu.Unlock()
		close(d.done)
	}()
	return d, true, nil
}

// takeOutcome forgets an ended download once a caller has its outcome.
func (s *Store) takeOutcome(key string, d *download) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.downloads[key] == d {
		delete(s.downloads, key)
	}
}
