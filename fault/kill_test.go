package fault

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

const (
	killCycles     = 10
	killConfigMaps = 300
	killServices   = 4
)

// killRevision is the content of revision r: 300 ConfigMaps, a window that slides by 25
// names per revision (so each revision changes 275, adds 25 and removes 25) with data
// naming the revision, and 4 Services whose port changes with the revision plus one
// that exists only in even revisions.
func killRevision(r int) desired {
	d := desired{configMaps: map[string]map[string]string{}, services: map[string]int32{}}
	for i := range killConfigMaps {
		k := r*25 + i
		d.configMaps[fmt.Sprintf("cm-%04d", k)] = map[string]string{"revision": strconv.Itoa(r), "key": strconv.Itoa(k)}
	}
	for i := range killServices {
		d.services[fmt.Sprintf("svc-%d", i)] = int32(8000 + r)
	}
	if r%2 == 0 {
		d.services["svc-even"] = 9000
	}
	return d
}

// TestSIGKILLDuringApply kills the operator binary with SIGKILL at random points while it
// applies revisions of 300 ConfigMaps and 5 Services, 10 times, and then lets one run to
// completion: the cluster must equal the last commit exactly. It runs alone (not
// parallel) with operators of its own.
func TestSIGKILLDuringApply(t *testing.T) {
	f, sha := newFixture(t, killRevision(0).files(), 2*time.Second)
	logPath := filepath.Join(workDir, "kill-gitsync.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the operator's log:\n%s", gitsyncproc.Tail(logPath, 40))
		}
	})
	opts := gitsyncproc.Options{Binary: binary, Kubeconfig: kubeconfig, StoragePath: t.TempDir(), Log: logPath}
	g := NewWithT(t)

	// Revision 0 to completion, watching the objects: how long the apply itself takes (from
	// the first object written to the last) sets the range of the kill delays.
	start := time.Now()
	p := gitsyncproc.Start(t, opts)
	r0 := killRevision(0)
	var firstWrite, lastWrite time.Duration
	g.Eventually(func() int {
		n := countAtRevision(g, f, 0)
		if n > 0 && firstWrite == 0 {
			firstWrite = time.Since(start)
		}
		lastWrite = time.Since(start)
		return n
	}).WithTimeout(3 * time.Minute).WithPolling(20 * time.Millisecond).Should(Equal(r0.count()))
	f.waitApplied(sha, time.Minute)
	full := time.Since(start)
	applying := lastWrite - firstWrite
	p.Kill()
	checked := f.checkWorld(g, r0)
	t.Logf("revision 0: %d objects; first written %s after the start, all %s later; Ready after %s",
		r0.count(), firstWrite.Round(time.Millisecond), applying.Round(time.Millisecond), full.Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	last, lastSHA := 0, sha
	var midApply, beforeApply, afterApply int
	for cycle := 1; cycle <= killCycles; cycle++ {
		// Two of three cycles commit a new revision; the third restarts on the same one.
		if cycle%3 != 0 {
			last++
			lastSHA = f.repo.Commit("main", fmt.Sprintf("revision %d", last), killRevision(last).files())
		}
		total := killRevision(last).count()
		before := countAtRevision(g, f, last)
		start := time.Now()
		p := gitsyncproc.Start(t, opts)
		// Kill at a random point of the apply: once the operator wrote its first object of
		// this run (or, when nothing is left to write, at a random point of a whole run).
		delay := time.Duration(rng.Int64N(int64(applying) + 1))
		if before < total {
			g.Eventually(func() int { return countAtRevision(g, f, last) }).
				WithTimeout(time.Minute).WithPolling(10 * time.Millisecond).Should(BeNumerically(">", before))
		} else {
			delay = time.Duration(rng.Int64N(int64(full)))
		}
		time.Sleep(delay)
		p.Kill()
		if exited, err := p.Exited(); !exited {
			t.Fatalf("cycle %d: the operator did not end after SIGKILL", cycle)
		} else if err == nil {
			t.Fatalf("cycle %d: the operator exited on its own before the kill", cycle)
		}
		// Where did the kill land? Count the objects already at the last revision.
		at := countAtRevision(g, f, last)
		switch {
		case at == before:
			beforeApply++
		case at < total:
			midApply++
		default:
			afterApply++
		}
		t.Logf("cycle %d: revision %d, killed %s after the start with %d of %d objects at it (%d before the start)",
			cycle, last, time.Since(start).Round(time.Millisecond), at, total, before)
	}

	// A final run to completion.
	start = time.Now()
	gitsyncproc.Start(t, opts)
	app := f.waitApplied(lastSHA, 3*time.Minute)
	recovery := time.Since(start)
	want := killRevision(last)
	checked += f.checkWorld(g, want)
	g.Expect(inventoryIDs(app)).To(Equal(want.inventory(f.ns)), "the inventory lists exactly the last commit's objects")
	t.Logf("fault figures: %d SIGKILL runs (%d with no object written, %d mid-apply, %d after the last object), "+
		"then a run to completion applied revision %d in %s; %d objects checked against Git, nothing extra, nothing missing",
		killCycles, beforeApply, midApply, afterApply, last, recovery.Round(time.Millisecond), checked)
}

// countAtRevision counts the fixture's ConfigMaps and Services that hold revision r's
// values.
func countAtRevision(g Gomega, f *fixture, r int) int {
	want := killRevision(r)
	cms, svcs := f.live(g)
	n := 0
	for name, data := range want.configMaps {
		if got, ok := cms[name]; ok && got["revision"] == data["revision"] {
			n++
		}
	}
	for name, port := range want.services {
		if got, ok := svcs[name]; ok && got == port {
			n++
		}
	}
	return n
}
