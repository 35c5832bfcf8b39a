// Package limits holds the operator's limits on what a tenant's spec may ask for (gitsync
// run --max-timeout, --min-interval, --max-artifact-size), so that no tenant holds a
// worker for a year, polls in a loop, or fills the disk; and the caps on a registry's
// answers that every OCI client of the operator shares (RegistryAnswers).
package limits

import (
	"fmt"
	"time"
)

// Caps are the limits; a zero field is no limit.
type Caps struct {
	// MaxTimeout bounds every wait a spec's timeout sets (an apply, a hook, a wave, health).
	MaxTimeout time.Duration
	// MinInterval is the shortest interval a spec may poll or resync at.
	MinInterval time.Duration
	// MaxArtifactSize bounds what a fetch may download (spec.maxSize; its 0, "no limit",
	// gets this).
	MaxArtifactSize int64
}

// Timeout returns d within MaxTimeout, and a note when it was lowered.
func (c Caps) Timeout(field string, d time.Duration) (time.Duration, string) {
	if c.MaxTimeout > 0 && d > c.MaxTimeout {
		return c.MaxTimeout, fmt.Sprintf("%s %s is over the operator's --max-timeout: %s applies", field, d, c.MaxTimeout)
	}
	return d, ""
}

// Interval returns d no shorter than MinInterval, and a note when it was raised.
func (c Caps) Interval(field string, d time.Duration) (time.Duration, string) {
	if c.MinInterval > 0 && d < c.MinInterval {
		return c.MinInterval, fmt.Sprintf("%s %s is under the operator's --min-interval: %s applies", field, d, c.MinInterval)
	}
	return d, ""
}

// ArtifactSize returns n (bytes; 0 is no limit) within MaxArtifactSize, and a note when
// it was lowered.
func (c Caps) ArtifactSize(field string, n int64) (int64, string) {
	if c.MaxArtifactSize > 0 && (n == 0 || n > c.MaxArtifactSize) {
		asked := fmt.Sprint(n)
		if n == 0 {
			asked = "0 (no limit)"
		}
		return c.MaxArtifactSize, fmt.Sprintf("%s %s is over the operator's --max-artifact-size: %d bytes apply", field, asked, c.MaxArtifactSize)
	}
	return n, ""
}
