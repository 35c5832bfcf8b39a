package source

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/gitsync-dev/gitsync/internal/egress"
)

// FetcherOptions configure a Fetcher; the zero value is the local one (the CLI's): no
// egress guard, file:// URLs allowed.
type FetcherOptions struct {
	// Egress guards every address a URL dials: http(s), each redirect hop included, and
	// ssh:// and scp-like user@host:path (through egress.Guard.ProxyURL).
	Egress *egress.Guard
	// RefuseFileURLs refuses file:// URLs (ErrURLInvalid): in the operator, a tenant's
	// file:// URL would read the operator's own disk.
	RefuseFileURLs bool
}

// keptTransports is how many HTTP transports (one per CA bundle) go-git keeps.
const keptTransports = 16

// transportFor is the guarded HTTP transport for http(s), go-git's default for the rest.
func (f *Fetcher) transportFor(ep *transport.Endpoint) transport.Transport {
	if ep.Protocol == "http" || ep.Protocol == "https" {
		return f.http
	}
	return nil
}

// NewFetcher returns a Fetcher that keeps its checkouts under
// <storagePath>/checkouts, creating that directory, with the zero FetcherOptions.
func NewFetcher(storagePath string) (*Fetcher, error) {
	return NewFetcherWithOptions(storagePath, FetcherOptions{})
}

// NewFetcherWithOptions is NewFetcher with options.
func NewFetcherWithOptions(storagePath string, opts FetcherOptions) (*Fetcher, error) {
	abs, err := filepath.Abs(storagePath)
	if err != nil {
		return nil, fmt.Errorf("resolving storage path %q: %w", storagePath, err)
	}
	dir := filepath.Join(abs, checkoutsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating checkout directory: %w", err)
	}
	// Redirects: go-git's own policy (the first request only, credentials stripped when
	// the origin changes) and the guard's re-check of each hop.
	hc := opts.Egress.Client(opts.Egress.Transport(), 0)
	return &Fetcher{dir: dir, opts: opts, writing: map[string]bool{}, inUse: map[string]int{},
		http: githttp.NewClientWithOptions(hc, &githttp.ClientOptions{CacheMaxEntries: keptTransports})}, nil
}
