package oci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tmpMaxAge is how long a temporary directory may live before GC takes it for the
// leftover of a pull that crashed.
const tmpMaxAge = 10 * time.Minute

// GC removes the artifact directories whose path (ArtifactDir's) is not a key of keep
// and that are older than minAge (a pull that is about to be recorded is not taken),
// and temporary directories older than ten minutes. It returns how many artifact
// directories it removed.
func (c *Client) GC(keep map[string]bool, minAge time.Duration) (int, error) {
	if c.dir == "" {
		return 0, nil
	}
	kept := make(map[string]bool, len(keep))
	for k, v := range keep {
		if v {
			kept[filepath.Base(k)] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return 0, fmt.Errorf("listing artifacts: %w", err)
	}
	now := time.Now()
	removed := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		info, err := e.Info()
		if err != nil || kept[name] {
			continue
		}
		tmp := strings.HasPrefix(name, ".tmp-")
		if age := now.Sub(info.ModTime()); (tmp && age < tmpMaxAge) || (!tmp && age < minAge) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.dir, name)); err != nil {
			errs = append(errs, err)
			continue
		}
		if !tmp {
			removed++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("removing artifacts: %w", err)
	}
	return removed, nil
}
