package imagescan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// tagsDir is the directory under the storage path holding one file per ImageRepository.
const tagsDir = "imagetags"

// Store keeps each ImageRepository's tags in a file under <storage>/imagetags.
type Store struct{ dir string }

// NewStore returns the Store under storagePath, creating its directory.
func NewStore(storagePath string) (*Store, error) {
	dir := filepath.Join(storagePath, tagsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the image tag directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

// file is the path of namespace/name's list; both are DNS names (no "/" nor "_").
func (s *Store) file(namespace, name string) (string, error) {
	if namespace == "" || name == "" || strings.ContainsAny(namespace+name, `/\_`) || strings.HasPrefix(namespace+name, ".") {
		return "", fmt.Errorf("invalid image repository key %q/%q", namespace, name)
	}
	return filepath.Join(s.dir, namespace+"_"+name+".json"), nil
}

// Save replaces namespace/name's tags (atomically: a reader sees the old or the new list).
func (s *Store) Save(namespace, name string, tags []string) error {
	path, err := s.file(namespace, name)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".tags-*")
	if err != nil {
		return fmt.Errorf("storing tags: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := json.NewEncoder(tmp).Encode(tags); err != nil {
		tmp.Close()
		return fmt.Errorf("storing tags: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("storing tags: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("storing tags: %w", err)
	}
	return nil
}

// ErrNotScanned: no list is stored for the repository (not scanned yet by this operator).
var ErrNotScanned = errors.New("the image repository has not been scanned yet")

// Load returns namespace/name's tags.
func (s *Store) Load(namespace, name string) ([]string, error) {
	path, err := s.file(namespace, name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotScanned
	}
	if err != nil {
		return nil, fmt.Errorf("reading stored tags: %w", err)
	}
	defer f.Close()
	var tags []string
	if err := json.NewDecoder(io.LimitReader(f, maxStoredBytes)).Decode(&tags); err != nil {
		return nil, fmt.Errorf("reading stored tags: %w", err)
	}
	return tags, nil
}

// Delete removes namespace/name's list (nothing when there is none).
func (s *Store) Delete(namespace, name string) error {
	path, err := s.file(namespace, name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// maxStoredBytes bounds a stored list: MaxTags tags of MaxTagLength, quoted.
const maxStoredBytes = DefaultMaxTags * (MaxTagLength + 3)

// LatestTags are up to n tags, in descending string order (what status shows; Flux
// shows the last ten in the same way).
func LatestTags(tags []string, n int) []string {
	sorted := append([]string(nil), tags...)
	sort.Sort(sort.Reverse(sort.StringSlice(sorted)))
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	return sorted
}
