package syncwindow

import (
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// horizon bounds the search for the next change of state.
const horizon = 366 * 24 * time.Hour

// maxChanges bounds the window starts and ends one search walks; past it, Until is a
// time the state holds at least until.
const maxChanges = 64

// Decision is what the windows say at one time.
type Decision struct {
	// Open: a new revision may be applied (no deny window is active, and an allow
	// window is active or there is none).
	Open bool
	// Until is when Open changes next, or (for windows whose activations chain on and
	// on) a time it holds at least until, when the caller asks again; zero when Open
	// does not change within a year.
	Until time.Time
	// ManualSync: a requested sync may run now (always true when Open). While closed, it
	// is true when every active deny window has manualSync, and, when no allow window
	// is active, one of the allow windows has manualSync.
	ManualSync bool
	// SelfHeal: drift of the applied revision may be corrected now (as spec.selfHeal
	// says). Always true when Open; while closed, false when one of the windows that
	// close the Application (the active deny windows, or every allow window when none
	// is active) has selfHeal: false — deny wins.
	SelfHeal bool
	// By lists the windows that close the Application (the active deny windows, or every
	// allow window when none is active), as written; empty when Open.
	By []string
}

// At decides at t. A Set without windows is always open.
func (s Set) At(t time.Time) Decision {
	d := s.state(t)
	if len(s) == 0 {
		return d
	}
	d.Until = s.nextChange(t, func(n Decision) bool { return n.Open != d.Open })
	return d
}

// state is At without Until.
func (s Set) state(t time.Time) Decision {
	var denies, allows []Window
	hasAllow, allowManual := false, false
	for _, w := range s {
		on := w.on(t)
		switch {
		case w.Deny && on:
			denies = append(denies, w)
		case !w.Deny:
			hasAllow = true
			allowManual = allowManual || w.ManualSync
			if on {
				allows = append(allows, w)
			}
		}
	}
	allowClosed := hasAllow && len(allows) == 0
	if len(denies) == 0 && !allowClosed {
		return Decision{Open: true, ManualSync: true, SelfHeal: true}
	}
	d := Decision{ManualSync: true, SelfHeal: true}
	for _, w := range denies {
		d.ManualSync = d.ManualSync && w.ManualSync
		d.SelfHeal = d.SelfHeal && !w.NoSelfHeal
		d.By = append(d.By, w.Spec)
	}
	if allowClosed {
		d.ManualSync = d.ManualSync && allowManual
		for _, w := range s {
			if !w.Deny {
				d.SelfHeal = d.SelfHeal && !w.NoSelfHeal
				d.By = append(d.By, "outside "+w.Spec)
			}
		}
	}
	return d
}

// SelfHeal tells whether spec.syncWindows let drift of the applied revision be
// corrected at t, and when to ask again if not (zero: not within the horizon). Windows
// that do not parse hold every sync, so then any entry with selfHeal: false says no.
func SelfHeal(specs []gitsyncv1.SyncWindow, t time.Time) (ok bool, until time.Time) {
	if len(specs) == 0 {
		return true, time.Time{}
	}
	set, err := Parse(specs)
	if err != nil {
		for _, s := range specs {
			if s.SelfHeal != nil && !*s.SelfHeal {
				return false, time.Time{}
			}
		}
		return true, time.Time{}
	}
	if set.state(t).SelfHeal {
		return true, time.Time{}
	}
	return false, set.nextChange(t, func(n Decision) bool { return n.SelfHeal })
}

// nextChange walks the windows' starts and ends after t to the first time the state has
// changed (not open any more, or open again, or as changed says); zero when that is
// beyond the horizon, and the last time walked when the walk is longer than maxChanges.
func (s Set) nextChange(t time.Time, changed func(Decision) bool) time.Time {
	at := t
	for range maxChanges {
		next := time.Time{}
		for _, w := range s {
			// An active window changes nothing until its end (an activation before the
			// end only extends it); an inactive one until its next start.
			c := w.nextStart(at)
			if w.on(at) {
				c = w.end(at)
			}
			next = earliest(next, c)
		}
		if next.IsZero() || next.Sub(t) > horizon {
			return time.Time{}
		}
		if changed(s.state(next)) {
			return next
		}
		at = next
	}
	return at
}

// earliest is the earlier of a and b, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
