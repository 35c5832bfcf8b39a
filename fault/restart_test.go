package fault

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestAPIServerRestart stops kube-apiserver and starts it again on the same address
// (etcd keeps running) under a running operator: without restarting gitsync, a commit
// made after the restart is applied. It reports how long that first commit took, next to
// the same measure before the restart (a figure, not an assertion). It runs alone (not
// parallel): every test would see the API server go away.
func TestAPIServerRestart(t *testing.T) {
	sharedOperator(t)
	pid := sharedPid()
	g := NewWithT(t)
	first := smallRevision("a", "one", "two")
	f, sha := newFixture(t, first.files(), 10*time.Second)
	f.waitApplied(sha, time.Minute)

	// Before: a commit and a sync request, as the webhook would make it.
	before := smallRevision("b", "one", "three")
	sha = f.repo.Commit("main", "before the restart", before.files())
	start := time.Now()
	f.requestSync(g)
	f.waitApplied(sha, time.Minute)
	baseline := time.Since(start)
	f.checkWorld(g, before)

	restart := time.Now()
	g.Expect(env.RestartAPIServer()).To(Succeed())
	t.Logf("kube-apiserver was restarted in %s", time.Since(restart).Round(time.Millisecond))

	after := smallRevision("c", "three", "four")
	sha = f.repo.Commit("main", "after the restart", after.files())
	start = time.Now()
	g.Eventually(f.requestSync).WithTimeout(30 * time.Second).WithPolling(pollInterval).Should(Succeed())
	f.waitApplied(sha, 2*time.Minute)
	took := time.Since(start)
	f.checkWorld(g, after)
	t.Logf("fault figures: first commit after the API server restart applied in %s (goal 5s; before the restart: %s)",
		took.Round(time.Millisecond), baseline.Round(time.Millisecond))

	// Recovered without a restart: it is the same process.
	g.Expect(sharedPid()).To(Equal(pid), "the operator was restarted")
}

// TestAPIServerRestartPendingCommit: a commit pushed while kube-apiserver is down (the
// source polls every 2s, so its fetches and status writes fail meanwhile) is applied
// soon after the API server is back: the backoff of what failed while it was away does
// not hold the sync back. It reports the time from the API server's return to the commit
// applied (a figure; the goal is 5s).
func TestAPIServerRestartPendingCommit(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	first := smallRevision("p", "one", "two")
	f, sha := newFixture(t, first.files(), 2*time.Second)
	f.waitApplied(sha, time.Minute)

	pending := smallRevision("q", "two", "three")
	g.Expect(env.RestartAPIServerAfter(func() {
		sha = f.repo.Commit("main", "while the API server is down", pending.files())
		time.Sleep(10 * time.Second) // failures accumulate backoff meanwhile
	})).To(Succeed())
	back := time.Now()
	f.waitApplied(sha, 2*time.Minute)
	took := time.Since(back)
	f.checkWorld(g, pending)
	t.Logf("fault figures: commit pushed while the API server was down applied %s after it was back (goal 5s)", took.Round(time.Millisecond))
}
