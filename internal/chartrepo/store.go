// Package chartrepo fetches Helm chart repositories: an https index.yaml with a
// conditional GET, an OCI registry's tag lists, and chart archives, each kept on disk by
// digest so that a poll that finds nothing new downloads nothing.
package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gitsync-dev/gitsync/internal/egress"
)

// Caps on what is downloaded.
const (
	// MaxChartSize is the largest chart archive (compressed) that is downloaded.
	MaxChartSize = 10 << 20
	// DefaultMaxIndexSize is the largest index.yaml that is downloaded unless
	// Options.MaxIndexSize says otherwise; the download stops at the cap.
	DefaultMaxIndexSize = 32 << 20
	// DefaultMaxTagPages is the most pages of an OCI repository's tag list that are read
	// (DefaultTagPageSize tags each).
	DefaultMaxTagPages = 10
	// DefaultTagPageSize is the number of tags asked for per page.
	DefaultTagPageSize = 1000
	// MaxTagPageBytes is the largest answer of one tag list page.
	MaxTagPageBytes = 4 << 20
	// MaxManifestBytes is the largest manifest (or other answer but a tag list or a blob)
	// read from an OCI registry; a chart's manifest is well under a KiB.
	MaxManifestBytes = 1 << 20
	// keptTransports is how many transports (one per CA bundle) are kept for reuse.
	keptTransports = 16
)

// Options of a Store; zero values take the defaults.
type Options struct {
	// Egress guards every address dialled for a repository (index, charts, OCI registry
	// and its token service, each redirect hop); nil: no guard.
	Egress *egress.Guard
	// MaxIndexSize caps a downloaded index.yaml (DefaultMaxIndexSize).
	MaxIndexSize int64
	// MaxTagPages caps the pages of an OCI tag list (DefaultMaxTagPages).
	MaxTagPages int
	// MaxTimeout caps every Source's Timeout (gitsync run --max-timeout); 0: no cap.
	MaxTimeout time.Duration
}

// Source is a chart repository and its credentials.
type Source struct {
	// URL is https://…, http://… or oci://host/path.
	URL string
	// Username and Password are sent with basic auth: to the repository's host only.
	Username, Password string
	// CA is a PEM bundle trusted besides the system's roots.
	CA []byte
	// Timeout bounds a poll or a download, each request of it and its body included
	// (DefaultTimeout when zero; never more than Options.MaxTimeout).
	Timeout time.Duration
	// Key is the identity the repository's archives are cached under: its URL and the
	// credentials it fetches with (see CacheKey). A chart another identity downloaded is
	// never served from the cache to this one, which downloads it with its own
	// credentials. Empty: the URL alone.
	Key string
	// Tenant is whose allowance of background downloads (FetchWithin) this one counts
	// against: the namespace of the HelmRepository.
	Tenant string
}

// CacheKey is the cache identity of a repository at url fetched with credentials (an
// identity of them, e.g. "<namespace>/<secret name>"; "" for none).
func CacheKey(url, credentials string) string {
	return strings.TrimSuffix(url, "/") + "\x00" + credentials
}

func (src Source) cacheKey() string {
	if src.Key != "" {
		return src.Key
	}
	return strings.TrimSuffix(src.URL, "/")
}

// IsOCI tells whether url names an OCI registry.
func IsOCI(url string) bool { return strings.HasPrefix(url, "oci://") }

// Store keeps indexes and chart archives under one directory.
type Store struct {
	dir  string
	opts Options

	mu         sync.Mutex
	indexes    map[string]*IndexFile // parsed, by digest
	order      []string              // digests of indexes, oldest first
	transports *transportCache       // by CA digest
	downloads  map[string]*download  // FetchWithin's, by identity, chart and version
}

// keptIndexes is how many parsed indexes stay in memory.
const keptIndexes = 8

// New makes a Store in dir (created when missing), without an egress guard.
func New(dir string) (*Store, error) { return NewWithOptions(dir, Options{}) }

// NewWithOptions makes a Store in dir (created when missing).
func NewWithOptions(dir string, opts Options) (*Store, error) {
	for _, sub := range []string{"index", "charts", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("preparing chart storage: %w", err)
		}
	}
	if opts.MaxIndexSize <= 0 {
		opts.MaxIndexSize = DefaultMaxIndexSize
	}
	if opts.MaxTagPages <= 0 {
		opts.MaxTagPages = DefaultMaxTagPages
	}
	return &Store{dir: dir, opts: opts, indexes: map[string]*IndexFile{}, transports: newTransportCache(keptTransports),
		downloads: map[string]*download{}}, nil
}

func (s *Store) indexPath(digest string) string {
	return filepath.Join(s.dir, "index", hexOf(digest)+".yaml")
}

func (s *Store) chartPath(digest string) string {
	return filepath.Join(s.dir, "charts", hexOf(digest)+".tgz")
}

// refPath records which archive digest a repository's chart version was, by the
// repository's cache key (Source.Key): the offline lookup (Cached) and the OCI cache go
// through it.
func (s *Store) refPath(key, chart, version string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(key, "/") + "\x00" + chart + "\x00" + version))
	return filepath.Join(s.dir, "refs", hex.EncodeToString(sum[:]))
}

func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

func (s *Store) dirOf(sub string) string { return filepath.Join(s.dir, sub) }

// Cached returns the stored archive of a chart version that the repository identity key
// (Source.Key) downloaded, without any request; false when it never did (or the archive
// was collected since).
func (s *Store) Cached(key, chart, version string) (string, bool) {
	data, err := os.ReadFile(s.refPath(key, chart, version))
	if err != nil {
		return "", false
	}
	path := s.chartPath(strings.TrimSpace(string(data)))
	if _, err := os.Stat(path); err != nil {
		return "", false
	}
	touch(path)
	return path, true
}

func (s *Store) remember(key, chart, version, digest string) error {
	return os.WriteFile(s.refPath(key, chart, version), []byte(digest), 0o644)
}

// touch marks a file as used now, for GC.
func touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// GC removes the indexes that keep does not hold (by digest) and the chart archives and
// references unused for longer than maxAge. It returns how many files it removed.
func (s *Store) GC(keep map[string]bool, maxAge time.Duration) (int, error) {
	removed := 0
	var errs []error
	cutoff := time.Now().Add(-maxAge)
	for _, sub := range []string{"index", "charts", "refs"} {
		entries, err := os.ReadDir(filepath.Join(s.dir, sub))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue
			}
			name := e.Name()
			var drop bool
			switch sub {
			case "index":
				digest := "sha256:" + strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".etag")
				drop = !keep[digest] && info.ModTime().Before(time.Now().Add(-time.Minute))
			default:
				drop = info.ModTime().Before(cutoff)
			}
			if !drop {
				continue
			}
			if err := os.Remove(filepath.Join(s.dir, sub, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			removed++
		}
	}
	s.mu.Lock()
	for d := range s.indexes {
		if !keep[d] {
			delete(s.indexes, d)
		}
	}
	s.mu.Unlock()
	return removed, errors.Join(errs...)
}
