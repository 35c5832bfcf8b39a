package chartrepo

import (
	"fmt"
	"net/http"
	"testing"
)

// Transports are kept per CA bundle, the most recently used ones only.
func TestTransportCacheBounded(t *testing.T) {
	c := newTransportCache(keptTransports)
	for i := 0; i < 10*keptTransports; i++ {
		c.add(fmt.Sprint(i), &http.Transport{})
		if _, ok := c.get("0"); !ok && i < keptTransports {
			t.Fatalf("the most recently used transport was evicted after %d adds", i)
		}
	}
	if c.len() != keptTransports {
		t.Fatalf("the cache holds %d transports, want %d", c.len(), keptTransports)
	}
	if _, ok := c.get("0"); !ok {
		t.Fatal("a transport used at every add was evicted")
	}
	if _, ok := c.get("1"); ok {
		t.Fatal("an old transport is still kept")
	}
}
