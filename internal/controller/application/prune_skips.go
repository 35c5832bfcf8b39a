package application

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gitsync-dev/gitsync/internal/apply"
)

// HandedOffReason is the reason of the Normal event for objects a prune on deletion left
// to a sibling Application that renders them now.
const HandedOffReason = "HandedOff"

// handedOffAction marks, in an event's change list, an object left to a sibling.
const handedOffAction apply.Action = "left to it"

// heldAction marks, in an event's change list, an object a prune held back.
const heldAction apply.Action = "not pruned"

// maxSkipError bounds a sibling's render error as quoted in an event or status.
const maxSkipError = 300

// pruneSkip is why a prune left one of the Application's objects in place for a
// sibling: it renders the object now (a hand-off: err is nil), or it cannot be rendered
// (err) and might render it (the prune fails closed).
type pruneSkip struct {
	sibling string
	err     error
}

// pruneSkips collects, by inventory ID, the objects a prune's Claimed check skipped.
type pruneSkips struct {
	mu   sync.Mutex
	byID map[string]pruneSkip
}

func (s *pruneSkips) record(id, sibling string, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]pruneSkip{}
	}
	s.byID[id] = pruneSkip{sibling: sibling, err: err}
}

// split sorts entries the prune skipped into those handed off to a sibling that renders
// them and those held back by a sibling that cannot be rendered.
func (s *pruneSkips) split(entries []apply.Entry) (handedOff, unrendered []apply.Entry) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		skip, ok := s.byID[e.ID]
		switch {
		case !ok:
		case skip.err == nil:
			handedOff = append(handedOff, e)
		default:
			unrendered = append(unrendered, e)
		}
	}
	return handedOff, unrendered
}

// siblings names, once each and sorted, the siblings behind entries' skips: "Application
// NAME renders them" or "Application NAME cannot be rendered: ERROR".
func (s *pruneSkips) siblings(entries []apply.Entry) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		skip, ok := s.byID[e.ID]
		if !ok || seen[skip.sibling] {
			continue
		}
		seen[skip.sibling] = true
		if skip.err == nil {
			out = append(out, fmt.Sprintf("Application %s renders them", skip.sibling))
		} else {
			msg := skip.err.Error()
			if len(msg) > maxSkipError {
				msg = msg[:maxSkipError] + "…"
			}
			out = append(out, fmt.Sprintf("Application %s cannot be rendered: %s", skip.sibling, msg))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// markChanges lists entries as changes of action (for changeSummary).
func markChanges(entries []apply.Entry, action apply.Action) []apply.Change {
	out := make([]apply.Change, 0, len(entries))
	for _, e := range entries {
		out = append(out, apply.Change{Entry: e, Subject: e.Subject(), Action: action})
	}
	return out
}
