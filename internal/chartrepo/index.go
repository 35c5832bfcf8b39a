package chartrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"sigs.k8s.io/yaml"
)

// ErrIndexInvalid is an index.yaml that does not parse as a chart repository index.
var ErrIndexInvalid = errors.New("not a chart repository index")

// ErrChartNotFound is a chart, or a version of it, that the index does not hold.
var ErrChartNotFound = errors.New("chart not found")

// storeIndex validates an index and keeps it under its digest; an index the store holds
// already costs no write.
func (s *Store) storeIndex(data []byte, what string) (string, error) {
	sum := sha256.Sum256(data)
	if digest := "sha256:" + hex.EncodeToString(sum[:]); exists(s.indexPath(digest)) {
		touch(s.indexPath(digest))
		return digest, nil
	}
	tmp, _, digest, err := s.download(bytes.NewReader(data), int64(len(data)), "index", "storing the index")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	return digest, s.storeIndexFile(tmp, digest, what)
}

// storeIndexFile validates the index in tmp (whose digest is digest) and keeps it; tmp
// is renamed or left for the caller to remove.
func (s *Store) storeIndexFile(tmp, digest, what string) error {
	path := s.indexPath(digest)
	if exists(path) {
		touch(path)
		return nil
	}
	idx, err := loadIndexFile(tmp)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", redact.URL(what), ErrIndexInvalid, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storing the index: %w", err)
	}
	s.keepIndex(digest, idx)
	return nil
}

// download copies at most max+1 bytes of r into a new file of the sub directory and
// returns its path, the number of bytes copied (more than max: r held more) and their
// sha256 digest. The caller removes the file.
func (s *Store) download(r io.Reader, max int64, sub, what string) (path string, n int64, digest string, err error) {
	f, err := os.CreateTemp(s.dirOf(sub), ".dl-*")
	if err != nil {
		return "", 0, "", err
	}
	h := sha256.New()
	n, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", n, "", fmt.Errorf("%s: %w", what, err)
	}
	return f.Name(), n, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func (s *Store) keepIndex(digest string, idx *IndexFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.indexes[digest]; ok {
		return
	}
	s.indexes[digest] = idx
	s.order = append(s.order, digest)
	for len(s.order) > keptIndexes {
		delete(s.indexes, s.order[0])
		s.order = s.order[1:]
	}
}

// Index returns the stored index with this digest.
func (s *Store) Index(digest string) (*IndexFile, error) {
	s.mu.Lock()
	idx, ok := s.indexes[digest]
	s.mu.Unlock()
	if ok {
		return idx, nil
	}
	idx, err := loadIndexFile(s.indexPath(digest))
	if err != nil {
		return nil, fmt.Errorf("reading the stored index %s: %w", digest, err)
	}
	s.keepIndex(digest, idx)
	return idx, nil
}

// HasIndex tells whether the index with this digest is in storage.
func (s *Store) HasIndex(digest string) bool { return exists(s.indexPath(digest)) }

// Resolve picks, in the stored index, the highest version of name that versionRange
// (a semver range; empty: the newest stable version) accepts.
func (s *Store) Resolve(digest, name, versionRange string) (*ChartVersion, error) {
	if versionRange != "" {
		if _, err := semver.NewConstraint(versionRange); err != nil {
			return nil, fmt.Errorf("version %q is not a semver range: %w", versionRange, err)
		}
	}
	idx, err := s.Index(digest)
	if err != nil {
		return nil, err
	}
	cv, ok := idx.get(name, versionRange)
	if !ok {
		if _, ok := idx.Entries[name]; !ok {
			return nil, fmt.Errorf("chart %q is not in the repository: %w", name, ErrChartNotFound)
		}
		return nil, fmt.Errorf("no version of chart %q matches %q (has %s): %w",
			name, versionRange, versionsOf(idx.Entries[name]), ErrChartNotFound)
	}
	return cv, nil
}

// versionsOf lists up to five versions, newest first.
func versionsOf(cvs []*ChartVersion) string {
	var vs []string
	for i, cv := range cvs {
		if i == 5 {
			vs = append(vs, "…")
			break
		}
		vs = append(vs, cv.Version)
	}
	if len(vs) == 0 {
		return "no versions"
	}
	return strings.Join(vs, ", ")
}

// ociIndex is the index of an OCI repository made from tag lists: chart name → tags.
func ociIndex(src Source, tags map[string][]string) ([]byte, error) {
	idx := &IndexFile{APIVersion: "v1", Entries: map[string][]*ChartVersion{}}
	base := strings.TrimSuffix(src.URL, "/")
	for name, list := range tags {
		cvs := []*ChartVersion{}
		for _, tag := range list {
			version := strings.ReplaceAll(tag, "_", "+") // OCI tags cannot hold '+'
			v, err := semver.StrictNewVersion(version)
			if err != nil {
				continue
			}
			cvs = append(cvs, &ChartVersion{Name: name, Version: version, URLs: []string{base + "/" + name + ":" + tag}, semver: v})
		}
		sort.Slice(cvs, func(i, j int) bool { return cvs[i].semver.GreaterThan(cvs[j].semver) })
		idx.Entries[name] = cvs
	}
	return yaml.Marshal(idx) // map keys sorted: the same tags give the same digest
}

// Poll polls src as a HelmRepository does: its index.yaml, conditional on previous (the
// digest of the index in hand, or ""), or for oci:// the tags of charts.
func (s *Store) Poll(ctx context.Context, src Source, previous string, charts []string) (Poll, error) {
	if IsOCI(src.URL) {
		return s.PollTags(ctx, src, charts)
	}
	return s.PollIndex(ctx, src, previous)
}

// CachedVersion is Cached for a version of the index: the stored archive, when it has
// the digest the index states (if it states one). No request.
func (s *Store) CachedVersion(key string, cv *ChartVersion) (string, bool) {
	path, ok := s.Cached(key, cv.Name, cv.Version)
	if !ok || (cv.Digest != "" && !strings.EqualFold(strings.TrimSuffix(filepath.Base(path), ".tgz"), hexOf(cv.Digest))) {
		return "", false
	}
	return path, true
}

// Fetch returns the path of cv's archive (src's chart name, version), downloading it
// only when the cache does not hold it. downloaded is 0 for a cache hit.
func (s *Store) Fetch(ctx context.Context, src Source, cv *ChartVersion) (path string, downloaded int64, err error) {
	if len(cv.URLs) == 0 {
		return "", 0, fmt.Errorf("chart %s %s has no URL in the index", cv.Name, cv.Version)
	}
	if path, ok := s.CachedVersion(src.cacheKey(), cv); ok {
		return path, 0, nil
	}
	timeout := s.timeoutOf(src)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if IsOCI(src.URL) {
		path, downloaded, err = s.fetchOCI(ctx, src, cv.URLs[0])
	} else {
		path, downloaded, err = s.fetchHTTP(ctx, src, cv.URLs[0], cv.Digest)
	}
	if err != nil {
		return "", downloaded, timedOut(ctx, timeout, err)
	}
	if err := s.remember(src.cacheKey(), cv.Name, cv.Version, strings.TrimSuffix(filepath.Base(path), ".tgz")); err != nil {
		return "", downloaded, err
	}
	return path, downloaded, nil
}
