package limits

import (
	"testing"
	"time"
)

func TestCaps(t *testing.T) {
	c := Caps{MaxTimeout: 10 * time.Minute, MinInterval: 10 * time.Second, MaxArtifactSize: 1 << 30}
	if d, note := c.Timeout("spec.timeout", 8760*time.Hour); d != 10*time.Minute || note == "" {
		t.Errorf("timeout: %s %q", d, note)
	}
	if d, note := c.Timeout("spec.timeout", time.Minute); d != time.Minute || note != "" {
		t.Errorf("timeout within: %s %q", d, note)
	}
	if d, note := c.Interval("spec.interval", 100*time.Millisecond); d != 10*time.Second || note == "" {
		t.Errorf("interval: %s %q", d, note)
	}
	if n, note := c.ArtifactSize("spec.maxSize", 0); n != 1<<30 || note == "" {
		t.Errorf("no limit: %d %q", n, note)
	}
	if n, note := c.ArtifactSize("spec.maxSize", 5<<20); n != 5<<20 || note != "" {
		t.Errorf("within: %d %q", n, note)
	}
	if d, note := (Caps{}).Timeout("spec.timeout", 8760*time.Hour); d != 8760*time.Hour || note != "" {
		t.Errorf("no caps: %s %q", d, note)
	}
}
