package syncwindow

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func win(kind, schedule string, d time.Duration, tz string, manual bool) gitsyncv1.SyncWindow {
	return gitsyncv1.SyncWindow{Kind: kind, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz, ManualSync: manual}
}

func mustParse(t *testing.T, specs ...gitsyncv1.SyncWindow) Set {
	t.Helper()
	set, err := Parse(specs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The clock is the argument: each case asks At at a fixed instant.
func TestAt(t *testing.T) {
	weekdayFreeze := win("deny", "0 9 * * 1-5", 8*time.Hour, "", false)  // 09:00–17:00 UTC, Mon–Fri
	nightly := win("allow", "0 22 * * *", 2*time.Hour, "", true)         // 22:00–24:00 UTC
	berlin := win("deny", "0 9 * * *", time.Hour, "Europe/Berlin", true) // 08:00–09:00 UTC in winter
	cases := []struct {
		name    string
		windows []gitsyncv1.SyncWindow
		now     string
		open    bool
		until   string // "" for zero
		manual  bool
	}{
		{"no windows", nil, "2026-11-30T10:00:00Z", true, "", true},
		{"inside a deny window", []gitsyncv1.SyncWindow{weekdayFreeze}, "2026-11-30T10:00:00Z", false, "2026-11-30T17:00:00Z", false},
		{"at a deny window's start", []gitsyncv1.SyncWindow{weekdayFreeze}, "2026-11-30T09:00:00Z", false, "2026-11-30T17:00:00Z", false},
		{"at a deny window's end", []gitsyncv1.SyncWindow{weekdayFreeze}, "2026-11-30T17:00:00Z", true, "2026-12-01T09:00:00Z", true},
		{"before a deny window", []gitsyncv1.SyncWindow{weekdayFreeze}, "2026-11-30T08:59:59Z", true, "2026-11-30T09:00:00Z", true},
		{"a weekend, Friday's freeze over until Monday", []gitsyncv1.SyncWindow{weekdayFreeze}, "2026-12-05T12:00:00Z", true, "2026-12-07T09:00:00Z", true},
		{"outside the only allow window", []gitsyncv1.SyncWindow{nightly}, "2026-11-30T10:00:00Z", false, "2026-11-30T22:00:00Z", true},
		{"inside the allow window", []gitsyncv1.SyncWindow{nightly}, "2026-11-30T23:00:00Z", true, "2026-12-01T00:00:00Z", true},
		{"deny wins over allow", []gitsyncv1.SyncWindow{nightly, win("deny", "30 22 * * *", 10*time.Minute, "", false)},
			"2026-11-30T22:35:00Z", false, "2026-11-30T22:40:00Z", false},
		{"a time zone moves the window", []gitsyncv1.SyncWindow{berlin}, "2026-11-30T08:30:00Z", false, "2026-11-30T09:00:00Z", true},
		{"and outside it in UTC terms", []gitsyncv1.SyncWindow{berlin}, "2026-11-30T09:30:00Z", true, "2026-12-01T08:00:00Z", true},
		{"back-to-back deny windows close until the last ends", []gitsyncv1.SyncWindow{
			win("deny", "0 9 * * *", time.Hour, "", true), win("deny", "0 10 * * *", time.Hour, "", true)},
			"2026-11-30T09:30:00Z", false, "2026-11-30T11:00:00Z", true},
		{"manual sync needs every active deny window's leave", []gitsyncv1.SyncWindow{
			win("deny", "0 9 * * *", 2*time.Hour, "", true), win("deny", "0 10 * * *", time.Hour, "", false)},
			"2026-11-30T10:30:00Z", false, "2026-11-30T11:00:00Z", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustParse(t, c.windows...).At(at(c.now))
			if d.Open != c.open || d.ManualSync != c.manual {
				t.Fatalf("open %v manual %v (by %v); want open %v manual %v", d.Open, d.ManualSync, d.By, c.open, c.manual)
			}
			if c.until == "" {
				if !d.Until.IsZero() {
					t.Fatalf("until %s; want none", d.Until)
				}
			} else if !d.Until.Equal(at(c.until)) {
				t.Fatalf("until %s; want %s", d.Until.UTC().Format(time.RFC3339), c.until)
			}
			if !c.open && len(d.By) == 0 {
				t.Fatal("closed by no window")
			}
		})
	}
}

// A clock that moves: a deny window that opened now for an hour holds until its end,
// and from its end on the Application is open again.
func TestAtAsTheClockMoves(t *testing.T) {
	start := at("2026-11-30T09:00:00Z")
	set := mustParse(t, win("deny", "0 9 * * *", time.Hour, "", false))
	for now := start; now.Before(start.Add(time.Hour)); now = now.Add(7 * time.Minute) {
		if d := set.At(now); d.Open || !d.Until.Equal(start.Add(time.Hour)) {
			t.Fatalf("at %s: open %v until %s; want closed until 10:00", now, d.Open, d.Until)
		}
	}
	if d := set.At(start.Add(time.Hour)); !d.Open || !d.Until.Equal(start.Add(24*time.Hour)) {
		t.Fatalf("at the end: open %v until %s; want open until tomorrow 09:00", d.Open, d.Until)
	}
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]gitsyncv1.SyncWindow{
		"kind":                   win("maybe", "* * * * *", time.Hour, "", false),
		"schedule":               win("deny", "61 * * * *", time.Hour, "", false),
		"exactly 5 fields":       win("deny", "0 0 9 * * *", time.Hour, "", false),
		"give the time zone":     win("deny", "CRON_TZ=Europe/Berlin 0 9 * * *", time.Hour, "", false),
		"duration":               win("deny", "0 9 * * *", 0, "", false),
		"(0, 744h0m0s]":          win("deny", "0 9 * * *", MaxDuration+time.Minute, "", false),
		"timeZone \"Mars/Base\"": win("deny", "0 9 * * *", time.Hour, "Mars/Base", false),
	}
	for want, w := range cases {
		_, err := Parse([]gitsyncv1.SyncWindow{win("allow", "@daily", time.Hour, "", false), w})
		if err == nil || !strings.Contains(err.Error(), "spec.syncWindows[1]") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v", want, err)
		}
	}
}

// Activations that overlap make one window: an hourly deny window 90 minutes long never
// closes: Until is a time it holds at least until (walks are bounded), days ahead.
func TestOverlappingActivations(t *testing.T) {
	now := at("2026-11-30T10:15:00Z")
	d := mustParse(t, win("deny", "0 * * * *", 90*time.Minute, "", false)).At(now)
	if d.Open || d.Until.Before(now.Add(24*time.Hour)) {
		t.Fatalf("open %v until %s; want closed for days", d.Open, d.Until)
	}
}

// A schedule that never fires (February 30th) is never active and never changes state.
func TestScheduleThatNeverFires(t *testing.T) {
	d := mustParse(t, win("deny", "0 0 30 2 *", time.Hour, "", false)).At(at("2026-11-30T10:00:00Z"))
	if !d.Open || !d.Until.IsZero() {
		t.Fatalf("open %v until %s; want open for good", d.Open, d.Until)
	}
}

// The worst a tenant can write (a window every minute, an hour long, and many of them)
// is answered within the bounds of maxSteps and maxChanges: 20 windows, spec.syncWindows'
// MaxItems.
func BenchmarkAtEveryMinute(b *testing.B) {
	var specs []gitsyncv1.SyncWindow
	for range 10 {
		specs = append(specs, win("deny", "* * * * *", MaxDuration, "", false), win("allow", "*/7 * * * *", time.Minute, "", false))
	}
	set, err := Parse(specs)
	if err != nil {
		b.Fatal(err)
	}
	now := at("2026-11-30T10:00:00Z")
	for b.Loop() {
		set.At(now)
	}
}

// A window's selfHeal: false stops corrections only while that window holds revisions
// back (deny wins: one such window among those that close is enough), and SelfHeal says
// when to ask again.
func TestSelfHeal(t *testing.T) {
	no := false
	quiet := func(w gitsyncv1.SyncWindow) gitsyncv1.SyncWindow { w.SelfHeal = &no; return w }
	freeze := win("deny", "0 9 * * *", 2*time.Hour, "", false)    // 09:00–11:00 UTC
	late := win("deny", "0 10 * * *", 2*time.Hour, "", false)     // 10:00–12:00 UTC
	nightly := win("allow", "0 22 * * *", 2*time.Hour, "", false) // 22:00–24:00 UTC
	cases := []struct {
		name    string
		windows []gitsyncv1.SyncWindow
		now     string
		heal    bool
		until   string
	}{
		{"no windows", nil, "2026-11-30T10:00:00Z", true, ""},
		{"a closed window by default", []gitsyncv1.SyncWindow{freeze}, "2026-11-30T10:00:00Z", true, ""},
		{"a closed window saying false", []gitsyncv1.SyncWindow{quiet(freeze)}, "2026-11-30T10:00:00Z", false, "2026-11-30T11:00:00Z"},
		{"the same window, not active", []gitsyncv1.SyncWindow{quiet(freeze)}, "2026-11-30T12:00:00Z", true, ""},
		{"deny wins over a default window", []gitsyncv1.SyncWindow{late, quiet(freeze)}, "2026-11-30T10:30:00Z", false, "2026-11-30T11:00:00Z"},
		{"and ends with its window, not the other's", []gitsyncv1.SyncWindow{late, quiet(freeze)}, "2026-11-30T11:30:00Z", true, ""},
		{"outside an allow window saying false", []gitsyncv1.SyncWindow{quiet(nightly)}, "2026-11-30T10:00:00Z", false, "2026-11-30T22:00:00Z"},
		{"inside it", []gitsyncv1.SyncWindow{quiet(nightly)}, "2026-11-30T23:00:00Z", true, ""},
		{"an active allow window with a quiet deny window inside it", []gitsyncv1.SyncWindow{nightly, quiet(win("deny", "30 22 * * *", 10*time.Minute, "", false))},
			"2026-11-30T22:35:00Z", false, "2026-11-30T22:40:00Z"},
		{"windows that do not parse: an entry saying false says no", []gitsyncv1.SyncWindow{quiet(win("deny", "0 25 * * *", time.Hour, "", false))},
			"2026-11-30T10:00:00Z", false, ""},
		{"windows that do not parse, none saying false", []gitsyncv1.SyncWindow{win("deny", "0 25 * * *", time.Hour, "", false)},
			"2026-11-30T10:00:00Z", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			heal, until := SelfHeal(c.windows, at(c.now))
			if heal != c.heal {
				t.Fatalf("selfHeal %v; want %v", heal, c.heal)
			}
			if c.until == "" && !until.IsZero() || c.until != "" && !until.Equal(at(c.until)) {
				t.Fatalf("until %s; want %q", until.UTC().Format(time.RFC3339), c.until)
			}
			if set, err := Parse(c.windows); err == nil {
				if d := set.At(at(c.now)); d.SelfHeal != c.heal {
					t.Fatalf("At: selfHeal %v; want %v", d.SelfHeal, c.heal)
				}
			}
		})
	}
}
