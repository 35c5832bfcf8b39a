package cluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// An unreachable Cluster is probed again less and less often; an answer starts over.
func TestProbeBackoff(t *testing.T) {
	r := &Reconciler{RetryBase: time.Second, RetryMax: 10 * time.Second}
	key := types.NamespacedName{Namespace: "team", Name: "prod"}
	var got []time.Duration
	for range 6 {
		got = append(got, r.backoff(key))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
	}
	r.reset(key)
	if d := r.backoff(key); d != time.Second {
		t.Fatalf("after an answer: %s", d)
	}
	if d := (&Reconciler{}).backoff(key); d != 5*time.Second {
		t.Fatalf("default base: %s", d)
	}
}
