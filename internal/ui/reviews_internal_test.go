package ui

import (
	"testing"
	"time"
)

// The review caches forget an answer after their ttl and never hold more than max.
func TestExpiringIsBoundedAndForgets(t *testing.T) {
	now := time.Unix(0, 0)
	e := newExpiring[string, bool](10*time.Second, 2)
	e.now = func() time.Time { return now }
	e.put("a", true)
	e.put("b", false)
	if v, ok := e.get("b"); !ok || v {
		t.Fatalf("get(b) = %v, %v; want false, true", v, ok)
	}
	e.put("c", true)
	if e.len() != 2 {
		t.Fatalf("%d entries, want at most 2", e.len())
	}
	if _, ok := e.get("c"); !ok {
		t.Fatal("the newest entry was evicted")
	}
	now = now.Add(10 * time.Second)
	if _, ok := e.get("c"); ok {
		t.Fatal("an entry outlived its ttl")
	}
	e.put("d", true)
	if e.len() != 1 {
		t.Fatalf("%d entries after expiry, want 1 (the expired ones dropped when full)", e.len())
	}
}
