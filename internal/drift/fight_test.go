package drift

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const (
	imagePath    = "/spec/template/spec/containers/name=web/image"
	replicasPath = "/spec/replicas"
)

// written is one field written by managers, always with the same value.
func written(path string, managers ...string) []Field {
	return []Field{{Path: path, Managers: managers, ValueHash: "same"}}
}

// writtenValue is one field written by manager with the value that hashes to hash.
func writtenValue(path, manager, hash string) []Field {
	return []Field{{Path: path, Managers: []string{manager}, ValueHash: hash}}
}

// step is one correction after waiting after.
type step struct {
	after  time.Duration
	key    string // "deploy" when empty
	fields []Field
	want   Verdict
	// reason, when set, must be part of the verdict's Reason (which is not compared).
	reason string
}

func runSteps(t *testing.T, steps []step) {
	t.Helper()
	g := NewWithT(t)
	clock := newFakeClock()
	f := NewFights(clock.Now)
	for i, s := range steps {
		clock.Advance(s.after)
		key := s.key
		if key == "" {
			key = "apps/Deployment/demo/web"
		}
		got := f.Correction(key, s.fields)
		g.Expect(got.Reason).To(ContainSubstring(s.reason), "step %d", i)
		got.Reason = ""
		g.Expect(got).To(Equal(s.want), "step %d", i)
	}
}

func TestFightSameWriterSameField(t *testing.T) {
	fighter := written(imagePath, "legacy-operator")
	runSteps(t, []step{
		{after: 0, fields: fighter, want: Verdict{}},
		{after: 20 * time.Second, fields: fighter, want: Verdict{}},
		// The 3rd write-back within a minute: a fight.
		{after: 20 * time.Second, fields: fighter, want: Verdict{Fight: true, Delay: time.Second, Manager: "legacy-operator"},
			reason: `field manager "legacy-operator" keeps writing back the same value of ` + imagePath},
		{after: time.Second, fields: fighter, want: Verdict{Fight: true, Delay: 2 * time.Second, Manager: "legacy-operator"}},
		{after: 2 * time.Second, fields: fighter, want: Verdict{Fight: true, Delay: 4 * time.Second, Manager: "legacy-operator"},
			reason: "(5 times so far)"},
		// A minute of quiet after the 4s backoff: the fight is over.
		{after: 4*time.Second + time.Minute + time.Second, fields: fighter, want: Verdict{}},
		{after: time.Second, fields: fighter, want: Verdict{}},
		{after: time.Second, fields: fighter, want: Verdict{Fight: true, Delay: time.Second, Manager: "legacy-operator"}},
	})
}

func TestFightNotWithinAMinute(t *testing.T) {
	fighter := written(replicasPath, "kube-controller-manager")
	runSteps(t, []step{
		{after: 0, fields: fighter, want: Verdict{}},
		{after: 35 * time.Second, fields: fighter, want: Verdict{}},
		// Three write-backs, but not within a minute.
		{after: 35 * time.Second, fields: fighter, want: Verdict{}},
		{after: 35 * time.Second, fields: fighter, want: Verdict{}},
	})
}

func TestFightNeedsSameManagerAndField(t *testing.T) {
	runSteps(t, []step{
		{after: 0, fields: written(imagePath, "kubectl-edit"), want: Verdict{}},
		{after: time.Second, fields: written(imagePath, "kubectl-set"), want: Verdict{}},
		{after: time.Second, fields: written(imagePath, "kubectl-patch"), want: Verdict{}},
		{after: time.Second, fields: written(replicasPath, "kubectl-edit"), want: Verdict{}},
		{after: time.Second, fields: written("/data/LOG_LEVEL", "kubectl-edit"), want: Verdict{}},
		// The same field by the same manager, on another object, does not count here.
		{after: time.Second, key: "v1/ConfigMap/demo/other", fields: written(imagePath, "kubectl-edit"), want: Verdict{}},
		{after: time.Second, key: "v1/ConfigMap/demo/other", fields: written(imagePath, "kubectl-edit"), want: Verdict{}},
		{after: time.Second, fields: written(imagePath, "kubectl-edit"), want: Verdict{}},
	})
}

// A person's `kubectl set image` edits of one field, each a new value, a second apart:
// every one is reverted at once (docs/guides/drift.md: twenty edits are twenty reverts).
func TestFightPersonEditingOneFieldWithNewValues(t *testing.T) {
	var steps []step
	for i := range 20 {
		steps = append(steps, step{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", fmt.Sprintf("image-%d", i)), want: Verdict{}})
	}
	runSteps(t, steps)
}

// Going back and forth between two values is a person trying things, not a controller
// putting one value back: each write-back differs from the value last reverted.
func TestFightAlternatingValues(t *testing.T) {
	var steps []step
	for i := range 8 {
		steps = append(steps, step{after: 2 * time.Second, fields: writtenValue(imagePath, "kubectl-set", []string{"a", "b"}[i%2]), want: Verdict{}})
	}
	runSteps(t, steps)
}

func TestFightSameValueAfterNewOnes(t *testing.T) {
	runSteps(t, []step{
		{after: 0, fields: writtenValue(imagePath, "kubectl-set", "v1"), want: Verdict{}},
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v2"), want: Verdict{}},
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v3"), want: Verdict{}},
		// v3 written back: 2, then 3 times in a row.
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v3"), want: Verdict{}},
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v3"),
			want: Verdict{Fight: true, Delay: time.Second, Manager: "kubectl-set"}, reason: "(3 times so far)"},
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v3"),
			want: Verdict{Fight: true, Delay: 2 * time.Second, Manager: "kubectl-set"}},
		// A new value by the same writer is a new edit: reverted at once, the fight is over…
		{after: 2 * time.Second, fields: writtenValue(imagePath, "kubectl-set", "v4"), want: Verdict{}},
		// …and writing it back counts from one again.
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v4"), want: Verdict{}},
		{after: time.Second, fields: writtenValue(imagePath, "kubectl-set", "v4"),
			want: Verdict{Fight: true, Delay: time.Second, Manager: "kubectl-set"}},
	})
}

func TestFightPersonEditingDifferentFields(t *testing.T) {
	var steps []step
	for i := range 5 {
		steps = append(steps, step{after: 2 * time.Second, fields: written(fmt.Sprintf("/data/key%d", i), "kubectl-edit"), want: Verdict{}})
	}
	runSteps(t, steps)
}

func TestFightHotLoop(t *testing.T) {
	var steps []step
	for i := range 10 {
		steps = append(steps, step{after: 900 * time.Millisecond, fields: written(fmt.Sprintf("/data/key%d", i), "kubectl-edit"), want: Verdict{}})
	}
	// The 11th correction within 10 s: a hot loop, whoever wrote what.
	steps = append(steps,
		step{after: 900 * time.Millisecond, fields: written("/data/key10", "kubectl-edit"),
			want:   Verdict{Fight: true, Delay: time.Second, Manager: "kubectl-edit"},
			reason: "hot loop: 11 corrections within 10s"},
		// Corrections that go on right after the backoff keep the fight going.
		step{after: time.Second, fields: written("/data/key11", "kubectl-edit"),
			want: Verdict{Fight: true, Delay: 2 * time.Second, Manager: "kubectl-edit"}, reason: "hot loop"},
		step{after: 2 * time.Second, fields: written("/data/key12", "kubectl-edit"),
			want: Verdict{Fight: true, Delay: 4 * time.Second, Manager: "kubectl-edit"}, reason: "hot loop: corrections go on after a 2s backoff"},
		// A minute of quiet after the backoff ends it.
		step{after: 4*time.Second + time.Minute + time.Second, fields: written("/data/key13", "kubectl-edit"), want: Verdict{}},
	)
	runSteps(t, steps)
}

func TestFightBackoffCapped(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	f := NewFights(clock.Now)
	fighter := written(replicasPath, "scaler")
	var delays []time.Duration
	delay := 10 * time.Second
	for range 14 {
		// The fighter writes back at once; gitsync corrects when the backoff ran out.
		clock.Advance(delay)
		v := f.Correction("apps/Deployment/demo/web", fighter)
		if v.Fight {
			delays = append(delays, v.Delay)
			delay = v.Delay
		}
	}
	s := time.Second
	g.Expect(delays).To(Equal([]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 300 * s, 300 * s, 300 * s}))
}

func TestFightUnknownWriter(t *testing.T) {
	// A label removed again and again: nobody owns a removed field.
	removed := written("/metadata/labels/gitsync.dev~1application")
	runSteps(t, []step{
		{after: 0, fields: removed, want: Verdict{}},
		{after: time.Second, fields: removed, want: Verdict{}},
		{after: time.Second, fields: removed, want: Verdict{Fight: true, Delay: time.Second}, reason: "an unknown writer keeps writing back the same value of /metadata/labels/gitsync.dev~1application"},
	})
}

func TestFightMostFrequentManager(t *testing.T) {
	both := []Field{
		{Path: imagePath, Managers: []string{"deployer"}},
		{Path: replicasPath, Managers: []string{"scaler"}},
		{Path: "/spec/paused", Managers: []string{"scaler"}},
	}
	runSteps(t, []step{
		{after: 0, fields: both, want: Verdict{}},
		{after: time.Second, fields: both, want: Verdict{}},
		{after: time.Second, fields: both, want: Verdict{Fight: true, Delay: time.Second, Manager: "scaler"},
			reason: `field manager "scaler" keeps writing back the same value of /spec/paused and 1 more fields`},
	})
}

func TestFightForget(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	f := NewFights(clock.Now)
	key := "apps/Deployment/demo/web"
	fighter := written(imagePath, "legacy-operator")
	for range 3 {
		clock.Advance(time.Second)
		f.Correction(key, fighter)
	}
	g.Expect(f.Correction(key, fighter).Fight).To(BeTrue())
	f.Forget(key)
	g.Expect(f.Correction(key, fighter)).To(Equal(Verdict{}))

	// Quiet objects are dropped lazily, on a later correction of any object.
	clock.Advance(11 * time.Minute)
	f.Correction("v1/ConfigMap/demo/other", written("/data/x", "kubectl-edit"))
	f.mu.Lock()
	_, kept := f.objects[key]
	n := len(f.objects)
	f.mu.Unlock()
	g.Expect(kept).To(BeFalse())
	g.Expect(n).To(Equal(1))
}

func TestFightConcurrent(t *testing.T) {
	g := NewWithT(t)
	clock := newFakeClock()
	f := NewFights(clock.Now)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("v1/ConfigMap/demo/cm%d", w%3)
			for i := range 200 {
				clock.Advance(10 * time.Millisecond)
				f.Correction(key, written(fmt.Sprintf("/data/k%d", i%5), fmt.Sprintf("writer%d", w)))
				if i%50 == 49 {
					f.Forget(key)
				}
			}
		})
	}
	wg.Wait()
	// Still consistent: a fresh object is not fighting.
	g.Expect(f.Correction("v1/ConfigMap/demo/fresh", written("/data/a", "kubectl-edit"))).To(Equal(Verdict{}))
}
