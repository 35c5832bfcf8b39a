package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// tmpMaxAge is how long a temporary entry may live before GC treats it as
// left over by a crashed or killed Fetch.
const tmpMaxAge = 10 * time.Minute

// GC removes every checkout directory whose DirName is not a key of keep
// (keys may also be full paths; their base name counts), with its recorded
// digest and signed objects, and temporary entries older than ten minutes that no Fetch of
// this Fetcher is writing. It returns the number of checkout directories
// removed.
//
// GC keeps a checkout that is acquired (see Acquire) until it is released.
//
// GC does not remove a directory while a Fetch is looking it up or
// publishing it, but an artifact that Fetch has returned is only safe once
// its DirName is in keep: callers must include artifacts they are about to
// record.
func (f *Fetcher) GC(keep map[string]bool) (removed int, err error) {
	kept := make(map[string]bool, len(keep))
	for k, v := range keep {
		if v {
			kept[filepath.Base(k)] = true
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, fmt.Errorf("listing checkouts: %w", err)
	}
	var errs []error
	now := time.Now()
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(f.dir, name)
		switch {
		case strings.HasPrefix(name, tmpPrefix):
			if f.isWriting(name) {
				continue
			}
			info, err := e.Info()
			if err != nil || now.Sub(info.ModTime()) < tmpMaxAge {
				continue
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
		case (strings.HasSuffix(name, digestSuffix) || strings.HasSuffix(name, signedSuffix)) && !e.IsDir():
			base := strings.TrimSuffix(strings.TrimSuffix(name, digestSuffix), signedSuffix)
			if kept[base] || f.acquired(base) {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		case e.IsDir():
			if kept[name] || f.acquired(name) {
				continue
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			removed++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("removing checkouts: %w", err)
	}
	return removed, nil
}

// Acquire protects the checkout dir (an Artifact's Dir, or CheckoutDir's
// result) from GC until release is called, so that a build can read it while
// its repository moves on. Call Acquire before checking that dir exists: a
// checkout that exists after Acquire stays until release. Acquires nest;
// release is idempotent.
func (f *Fetcher) Acquire(dir string) (release func()) {
	name := filepath.Base(dir)
	// Shared with Fetch, exclusive with GC: GC sees the count or, if it ran
	// first, the directory is already gone.
	f.mu.RLock()
	f.inUseMu.Lock()
	f.inUse[name]++
	f.inUseMu.Unlock()
	f.mu.RUnlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.inUseMu.Lock()
			defer f.inUseMu.Unlock()
			if f.inUse[name]--; f.inUse[name] <= 0 {
				delete(f.inUse, name)
			}
		})
	}
}

func (f *Fetcher) acquired(name string) bool {
	f.inUseMu.Lock()
	defer f.inUseMu.Unlock()
	return f.inUse[name] > 0
}
