package chartrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/redact"
)

// MaxProvenanceSize is the largest .prov file downloaded (Helm's are a few KiB).
const MaxProvenanceSize = 1 << 20

// ErrNoProvenance is a chart whose repository serves no provenance file.
var ErrNoProvenance = errors.New("no provenance file")

// Provenance returns the provenance file of cv, the `<archive URL>.prov` Helm publishes
// beside a signed chart, from the cache or downloaded (at most MaxProvenanceSize bytes,
// within src's timeout). archive is the path Fetch returned; the file is cached beside
// it for this repository identity. Only HTTP repositories serve provenance files.
func (s *Store) Provenance(ctx context.Context, src Source, cv *ChartVersion, archive string) ([]byte, error) {
	if IsOCI(src.URL) {
		return nil, fmt.Errorf("chart %s %s: provenance files are served by HTTP chart repositories only", cv.Name, cv.Version)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s %s has no URL in the index", cv.Name, cv.Version)
	}
	key := sha256.Sum256([]byte(src.cacheKey()))
	cached := strings.TrimSuffix(archive, ".tgz") + "." + hex.EncodeToString(key[:8]) + ".prov"
	if b, err := os.ReadFile(cached); err == nil && filepath.Dir(cached) == s.dirOf("charts") {
		touch(cached)
		return b, nil
	}
	base, err := url.Parse(strings.TrimSuffix(src.URL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("repository URL: %w", err)
	}
	u, err := base.Parse(cv.URLs[0] + ".prov")
	if err != nil {
		return nil, fmt.Errorf("provenance URL of %s %s: %w", cv.Name, cv.Version, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("provenance URL %s: only http(s) URLs are fetched", redact.URL(u.String()))
	}
	timeout := s.timeoutOf(src)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.get(ctx, src, u.String(), nil)
	if err != nil {
		return nil, timedOut(ctx, timeout, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w at %s", ErrNoProvenance, redact.URL(u.String()))
	case resp.StatusCode != http.StatusOK:
		return nil, &StatusError{URL: u.String(), Code: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxProvenanceSize+1))
	if err != nil {
		return nil, timedOut(ctx, timeout, fmt.Errorf("downloading %s: %w", redact.URL(u.String()), err))
	}
	if len(b) > MaxProvenanceSize {
		return nil, fmt.Errorf("provenance file %s is larger than the %d bytes allowed: %w", redact.URL(u.String()), MaxProvenanceSize, ErrTooLarge)
	}
	if err := writeFileAtomic(cached, b); err != nil {
		return nil, err
	}
	return b, nil
}

// writeFileAtomic writes b to path through a temporary file in its directory.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dl-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
