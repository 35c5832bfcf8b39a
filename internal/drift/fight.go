package drift

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fight thresholds (docs/guides/drift.md). gitsync backs off only for a real fight, so
// that a person's edits are each reverted at once.
const (
	// fightWrites reverts within fightWindow of one field that one manager wrote back
	// with the same value each time make a fight.
	fightWrites = 3
	fightWindow = time.Minute
	// More than hotLoopCorrections corrections of one object within hotLoopWindow make
	// a fight whoever wrote what: following them would hot-loop.
	hotLoopCorrections = 10
	hotLoopWindow      = 10 * time.Second
	// The backoff doubles from minFightDelay with each consecutive fight verdict.
	minFightDelay = time.Second
	maxFightDelay = 5 * time.Minute
	// fightQuiet is how long after its backoff ran out an object must see no correction
	// that continues the fight for the fight to end.
	fightQuiet = time.Minute
	// An object corrected last longer ago than its backoff plus forgetAfter is dropped.
	forgetAfter = 10 * time.Minute
	// Bounds on what is kept per object, whatever the caller does.
	maxCorrectionsKept = 64
	maxWritesKept      = 8
)

// Verdict is the decision Fights takes on one correction.
type Verdict struct {
	// Fight is true when the correction is part of a fight: the same field manager wrote
	// back the same value of a field that gitsync reverted, again and again, or the
	// object is corrected so often that following it would hot-loop.
	Fight bool
	// Delay is how long to wait before correcting this object again: 0 when not
	// fighting, else 1s, 2s, 4s … (doubling with each consecutive fight verdict) up to 5m.
	Delay time.Duration
	// Manager names the other field manager of the fight (the most frequent one), for
	// the report. Empty when not fighting, or when the writer is not known (a removal).
	Manager string
	// Reason says why this is a fight, for a condition message or an event. Field paths
	// only, never values.
	Reason string
}

// Fights remembers recent corrections per object and decides when to back off. It is
// safe for concurrent use. An object's history is dropped by Forget, or lazily once it
// has been quiet for 10 minutes.
//
// A fight starts when one field manager (unknown, for a removal nobody owns, counts as
// one manager) writes back the same value of a field that gitsync reverted, 3 times in a
// row within a minute, or when an object is corrected more than 10 times within 10
// seconds. A value is recognized by Field.ValueHash, never stored itself: a new value of
// the field (a person's next `kubectl set image`) is a new edit, reverted at once, and
// ends a fight about that field. A fight goes on while the same writer writes back the
// same value (or, for a hot loop, while corrections keep coming) within a minute after
// each backoff has run out, so that the backoff can grow to its cap even when it is
// longer than a minute; a minute of quiet after the backoff ends it.
type Fights struct {
	now func() time.Time

	mu        sync.Mutex
	objects   map[string]*corrections
	lastSweep time.Time
}

// NewFights returns Fights that read the time from now (time.Now outside tests).
func NewFights(now func() time.Time) *Fights {
	return &Fights{now: now, objects: map[string]*corrections{}}
}

// write is one field written back by one manager ("" when nobody owns it).
type write struct {
	manager string
	path    string
}

// writeBack is a write and the hash of the value written (Field.ValueHash).
type writeBack struct {
	write
	hash string
}

// corrections is one object's history.
type corrections struct {
	// times of recent corrections, oldest first, within fightWindow.
	times []time.Time
	// managers of each of those corrections (parallel to times).
	managers [][]string
	// writes: for each (manager, field), the value last reverted and the times gitsync
	// reverted that same value in a row within fightWindow, oldest first.
	writes map[write]*writeHistory
	last   time.Time

	// The current fight: streak consecutive fight verdicts, the last one's delay, and
	// what it was about (the writes, or a hot loop).
	streak   int
	delay    time.Duration
	fighting map[write]bool
	hotLoop  bool
}

// writeHistory is what one manager wrote back to one field: the hash of the value last
// reverted, the times that same value was reverted in a row within fightWindow (oldest
// first), and how many times in a row in all (the current fight included).
type writeHistory struct {
	hash  string
	times []time.Time
	count int
}

// Correction records that gitsync reverted fields of object key, which the fields'
// Managers had written, at now(), and returns the verdict on it: whether this is a fight
// and how long to wait before the next correction of the object.
func (f *Fights) Correction(key string, fields []Field) Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.sweep(now)

	h := f.objects[key]
	if h == nil {
		h = &corrections{writes: map[write]*writeHistory{}}
		f.objects[key] = h
	}
	continuing := h.streak > 0 && now.Sub(h.last) <= h.delay+fightQuiet
	if !continuing {
		h.streak, h.delay, h.fighting, h.hotLoop = 0, 0, nil, false
	}
	h.prune(now)

	// Record this correction. A value other than the one last reverted starts the
	// count of that write again.
	writes := writesOf(fields)
	managers := make([]string, 0, len(writes))
	again := map[write]bool{}
	for _, wb := range writes {
		w := wb.write
		wh := h.writes[w]
		if wh == nil {
			wh = &writeHistory{hash: wb.hash}
			h.writes[w] = wh
		}
		if wh.hash == wb.hash && wh.count > 0 {
			again[w] = true
		} else {
			wh.hash, wh.times, wh.count = wb.hash, nil, 0
		}
		wh.times = append(wh.times, now)
		if len(wh.times) > maxWritesKept {
			wh.times = wh.times[1:]
		}
		wh.count++
		managers = append(managers, w.manager)
	}
	slices.Sort(managers)
	h.times = append(h.times, now)
	h.managers = append(h.managers, slices.Compact(managers))
	if len(h.times) > maxCorrectionsKept {
		h.times, h.managers = h.times[1:], h.managers[1:]
	}
	h.last = now

	// The writes that make a fight: the same value written back fightWrites times in a
	// row within fightWindow, or written back again by the writer the current fight is
	// about.
	var repeated []write
	for _, wb := range writes {
		w := wb.write
		if len(h.writes[w].times) >= fightWrites || (continuing && h.fighting[w] && again[w]) {
			repeated = append(repeated, w)
		}
	}
	recent := 0
	for _, t := range h.times {
		if now.Sub(t) < hotLoopWindow {
			recent++
		}
	}
	hot := recent > hotLoopCorrections || (continuing && h.hotLoop)

	if len(repeated) == 0 && !hot {
		h.streak, h.delay, h.fighting, h.hotLoop = 0, 0, nil, false
		return Verdict{}
	}
	previous := h.delay
	h.streak++
	h.delay = backoff(h.streak)
	v := Verdict{Fight: true, Delay: h.delay}
	if len(repeated) > 0 {
		h.fighting = map[write]bool{}
		for _, w := range repeated {
			h.fighting[w] = true
		}
		h.hotLoop = false
		v.Manager, v.Reason = h.writeBackReason(repeated)
	} else {
		h.fighting = nil
		h.hotLoop = true
		v.Manager = h.frequentManager()
		if recent > hotLoopCorrections {
			v.Reason = fmt.Sprintf("hot loop: %d corrections within %s", recent, hotLoopWindow)
		} else {
			v.Reason = fmt.Sprintf("hot loop: corrections go on after a %s backoff", previous)
		}
		if v.Manager != "" {
			v.Reason += fmt.Sprintf(", mostly of fields written by %q", v.Manager)
		}
	}
	return v
}

// Forget drops an object's history (it was deleted from Git, or is no longer managed).
func (f *Fights) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, key)
}

// sweep drops, at most once per fightWindow, the objects quiet for forgetAfter past
// their backoff.
func (f *Fights) sweep(now time.Time) {
	if now.Sub(f.lastSweep) < fightWindow {
		return
	}
	f.lastSweep = now
	for key, h := range f.objects {
		if now.Sub(h.last) > h.delay+forgetAfter {
			delete(f.objects, key)
		}
	}
}

// prune drops what is older than fightWindow, keeping the run counts of the writes the
// current fight is about.
func (h *corrections) prune(now time.Time) {
	i := 0
	for i < len(h.times) && now.Sub(h.times[i]) >= fightWindow {
		i++
	}
	h.times, h.managers = h.times[i:], h.managers[i:]
	for w, wh := range h.writes {
		j := 0
		for j < len(wh.times) && now.Sub(wh.times[j]) >= fightWindow {
			j++
		}
		wh.times = wh.times[j:]
		if len(wh.times) == 0 && !h.fighting[w] {
			delete(h.writes, w)
		}
	}
}

// writeBackReason names the manager with the most write-backs among repeated (ties:
// by name) and says what it wrote back.
func (h *corrections) writeBackReason(repeated []write) (string, string) {
	counts := map[string]int{}
	paths := map[string][]string{}
	for _, w := range repeated {
		counts[w.manager] += h.writes[w].count
		paths[w.manager] = append(paths[w.manager], w.path)
	}
	manager := ""
	best := -1
	for m, n := range counts {
		if n > best || (n == best && m < manager) {
			manager, best = m, n
		}
	}
	ps := paths[manager]
	slices.Sort(ps)
	what := ps[0]
	if len(ps) > 1 {
		what += fmt.Sprintf(" and %d more fields", len(ps)-1)
	}
	n := 0
	for _, w := range repeated {
		if w.manager == manager && w.path == ps[0] {
			n = h.writes[w].count
		}
	}
	who := "an unknown writer"
	if manager != "" {
		who = fmt.Sprintf("field manager %q", manager)
	}
	return manager, fmt.Sprintf("%s keeps writing back the same value of %s after gitsync reverts it (%d times so far)", who, what, n)
}

// frequentManager returns the named manager that wrote fields of the most recent
// corrections (ties: by name), or "" when none is known.
func (h *corrections) frequentManager() string {
	counts := map[string]int{}
	for _, ms := range h.managers {
		for _, m := range ms {
			if m != "" {
				counts[m]++
			}
		}
	}
	manager := ""
	best := 0
	for m, n := range counts {
		if n > best || (n == best && m < manager) {
			manager, best = m, n
		}
	}
	return manager
}

// writesOf returns the (manager, field) pairs of fields with the hash of the value
// written, unique by (manager, field) and sorted; a field with no manager is written by
// "" (unknown).
func writesOf(fields []Field) []writeBack {
	var out []writeBack
	for _, fd := range fields {
		if len(fd.Managers) == 0 {
			out = append(out, writeBack{write{path: fd.Path}, fd.ValueHash})
		}
		for _, m := range fd.Managers {
			out = append(out, writeBack{write{manager: m, path: fd.Path}, fd.ValueHash})
		}
	}
	slices.SortFunc(out, func(a, b writeBack) int {
		if c := strings.Compare(a.manager, b.manager); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	return slices.CompactFunc(out, func(a, b writeBack) bool { return a.write == b.write })
}

// backoff is the delay after the n-th consecutive fight verdict: 1s, 2s, 4s … 5m.
func backoff(n int) time.Duration {
	d := minFightDelay
	for i := 1; i < n && d < maxFightDelay; i++ {
		d *= 2
	}
	return min(d, maxFightDelay)
}
