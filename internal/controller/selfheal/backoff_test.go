package selfheal

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/desired"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// A drift check that keeps failing backs off exponentially per object, up to 5 minutes;
// a success resets it.
func TestDriftCheckFailuresBackOff(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := New(desired.New())
	r.Now = func() time.Time { return now }
	ref := drift.ObjectRef{Namespace: "ns", Name: "a"}
	other := drift.ObjectRef{Namespace: "ns", Name: "b"}
	var waits []time.Duration
	for range 12 {
		waits = append(waits, r.checkFailed(ref))
	}
	g.Expect(waits).To(Equal([]time.Duration{
		time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute,
	}))
	g.Expect(r.failureBackoffLeft(ref)).To(Equal(5 * time.Minute))
	g.Expect(r.failureBackoffLeft(other)).To(BeZero())
	now = now.Add(time.Minute)
	g.Expect(r.failureBackoffLeft(ref)).To(Equal(4 * time.Minute))
	r.checkSucceeded(ref)
	g.Expect(r.failureBackoffLeft(ref)).To(BeZero())
	g.Expect(r.checkFailed(ref)).To(Equal(time.Second))
}
