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
	keptOutcome = 10 * time.Minute
)

// download is one background Fetch; done is closed when path, n and err are set.
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
// MaxDownloadsPerTenant per tenant, and FetchWithin waits for it at most wait (or until
// ctx ends). When it is not done by then the error is ErrInProgress; a later call for the
// same identity and version joins the download or, once it ended, gets its outcome (a
// failure once; the call after that downloads again).
func (s *Store) FetchWithin(ctx context.Context, src Source, cv *ChartVersion, wait time.Duration) (string, int64, error) {
	if len(cv.URLs) == 0 {
		return "", 0, fmt.Errorf("chart %s %s has no URL in the index", cv.Name, cv.Version)
	}
	if path, ok := s.CachedVersion(src.cacheKey(), cv); ok {
		return path, 0, nil
	}
	key := strings.Join([]string{src.cacheKey(), cv.Name, cv.Version}, "\x00")
	d, err := s.startDownload(key, src, cv)
	if err != nil {
		return "", 0, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-d.done:
		s.takeOutcome(key, d)
		return d.path, d.n, d.err
	case <-timer.C:
		return "", 0, fmt.Errorf("chart %s %s: %w (for up to %s)", cv.Name, cv.Version, ErrInProgress, s.timeoutOf(src))
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// startDownload returns the download of key: the one under way or ended and not taken
// yet, else a new one, unless the tenant has MaxDownloadsPerTenant under way.
func (s *Store) startDownload(key string, src Source, cv *ChartVersion) (*download, error) {
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
		return d, nil
	}
	if running >= MaxDownloadsPerTenant {
		return nil, fmt.Errorf("chart %s %s: %w: waiting for %d other downloads of the same namespace", cv.Name, cv.Version, ErrInProgress, running)
	}
	d := &download{done: make(chan struct{}), tenant: src.Tenant}
	s.downloads[key] = d
	go func() {
		// Not the caller's context: the download outlives the wait, bounded by the
		// Source's timeout (Fetch).
		path, n, err := s.Fetch(context.Background(), src, cv)
		s.mu.Lock()
		d.path, d.n, d.err, d.ended = path, n, err, time.Now()
		if err == nil {
			delete(s.downloads, key) // the cache answers from now on
		}
		s.mu.Unlock()
		close(d.done)
	}()
	return d, nil
}

// takeOutcome forgets an ended download once a caller has its outcome.
func (s *Store) takeOutcome(key string, d *download) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.downloads[key] == d {
		delete(s.downloads, key)
	}
}
