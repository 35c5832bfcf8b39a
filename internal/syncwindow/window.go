package syncwindow

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // timeZone names resolve in an image without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// MaxDuration bounds a window's duration: a longer one is a permanent state, which
// spec.suspend or autoSync: false say better, and it bounds the walk in active.
const MaxDuration = 31 * 24 * time.Hour

// maxSteps bounds the activations walked to find where a window ends (a "* * * * *"
// window an hour long never does): past it, the end found is one the window lasts at
// least until, and the search for the next change goes on from there.
const maxSteps = 32

// parser reads the standard five fields (minute hour day-of-month month day-of-week)
// and the descriptors (@daily, @weekly, …); the time zone is the window's timeZone.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Window is one parsed spec.syncWindows entry.
type Window struct {
	// Deny is true for a deny window (no sync while it is active), false for an allow
	// window (syncs only while one is active).
	Deny bool
	// ManualSync lets a requested sync through while this window closes the Application.
	ManualSync bool
	// NoSelfHeal: drift is not corrected while this window closes the Application
	// (spec.syncWindows[].selfHeal false).
	NoSelfHeal bool
	// Spec is the entry as written, for messages: "deny 0 9 * * 1-5 for 8h (Europe/Berlin)".
	Spec     string
	schedule cron.Schedule
	duration time.Duration
	loc      *time.Location
}

// Set is an Application's windows, in spec order.
type Set []Window

// Parse reads spec.syncWindows. An error names the entry and what is wrong with it.
func Parse(specs []gitsyncv1.SyncWindow) (Set, error) {
	set := make(Set, 0, len(specs))
	for i, s := range specs {
		w, err := parseOne(s)
		if err != nil {
			return nil, fmt.Errorf("spec.syncWindows[%d]: %w", i, err)
		}
		set = append(set, w)
	}
	return set, nil
}

func parseOne(s gitsyncv1.SyncWindow) (Window, error) {
	w := Window{Deny: s.Kind == gitsyncv1.SyncWindowDeny, ManualSync: s.ManualSync, NoSelfHeal: s.SelfHeal != nil && !*s.SelfHeal, loc: time.UTC}
	if s.Kind != gitsyncv1.SyncWindowDeny && s.Kind != gitsyncv1.SyncWindowAllow {
		return w, fmt.Errorf("kind %q is neither allow nor deny", s.Kind)
	}
	schedule := strings.TrimSpace(s.Schedule)
	if strings.HasPrefix(schedule, "TZ=") || strings.HasPrefix(schedule, "CRON_TZ=") {
		return w, fmt.Errorf("schedule %q: give the time zone in timeZone", s.Schedule)
	}
	sched, err := parser.Parse(schedule)
	if err != nil {
		return w, fmt.Errorf("schedule %q: %w", s.Schedule, err)
	}
	w.schedule = sched
	w.duration = s.Duration.Duration
	if w.duration <= 0 || w.duration > MaxDuration {
		return w, fmt.Errorf("duration %s is not in (0, %s]", w.duration, MaxDuration)
	}
	if s.TimeZone != "" {
		if w.loc, err = time.LoadLocation(s.TimeZone); err != nil {
			return w, fmt.Errorf("timeZone %q: %w", s.TimeZone, err)
		}
	}
	w.Spec = fmt.Sprintf("%s %q for %s (%s)", s.Kind, schedule, w.duration, w.loc)
	return w, nil
}

// on tells whether the window is active at t: an activation in (t-duration, t].
func (w Window) on(t time.Time) bool {
	start := w.schedule.Next(t.Add(-w.duration).In(w.loc))
	return !start.IsZero() && !start.After(t)
}

// end is when the window active at t ends, or at least lasts until: activations that
// begin before the end extend it (up to maxSteps of them).
func (w Window) end(t time.Time) time.Time {
	start := w.schedule.Next(t.Add(-w.duration).In(w.loc))
	end := start.Add(w.duration)
	for range maxSteps {
		next := w.schedule.Next(start)
		if next.IsZero() || next.After(end) {
			break
		}
		start, end = next, next.Add(w.duration)
	}
	return end
}

// nextStart is the window's first activation after t (zero when none within five years).
func (w Window) nextStart(t time.Time) time.Time {
	return w.schedule.Next(t.In(w.loc))
}
