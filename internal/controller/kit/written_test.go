package kit

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A reconcile is told to read fresh only while the cache holds a version older than
// the status this reconciler wrote; once the cache caught up, nothing is remembered.
func TestWrittenVersionsStale(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	for _, c := range []struct {
		name, written, cached string
		stale, kept           bool
	}{
		{name: "nothing written", cached: "10"},
		{name: "cache behind", written: "12", cached: "10", stale: true, kept: true},
		{name: "cache caught up", written: "12", cached: "12"},
		{name: "cache ahead (another writer)", written: "12", cached: "15"},
		{name: "not numbers", written: "abc", cached: "10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &WrittenVersions{}
			if c.written != "" {
				w.Remember(key, c.written)
			}
			if got := w.Stale(key, c.cached); got != c.stale {
				t.Fatalf("stale = %v, want %v", got, c.stale)
			}
			if _, kept := w.m.Load(key); kept != c.kept {
				t.Fatalf("remembered = %v, want %v", kept, c.kept)
			}
		})
	}
}
