package kit

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// MaxEventNote is the longest note (in bytes, as the API server counts) an event may
// carry: a longer one is rejected and the event lost.
const MaxEventNote = 1024

// EventRecorder is the recorder every gitsync controller records its events with: the
// manager's, with each note bounded by BoundNote.
func EventRecorder(p recorder.Provider) recorder.EventRecorder {
	return BoundedRecorder{EventRecorder: p.GetEventRecorder("gitsync")}
}

// BoundedRecorder records through the wrapped recorder with the formatted note cut to
// MaxEventNote by BoundNote, so that the API server stores every event.
type BoundedRecorder struct {
	recorder.EventRecorder
}

// Eventf records the event with its note bounded.
func (r BoundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", BoundNote(format(note, args), MaxEventNote))
}

// AnnotatedEventf records the event with its note bounded.
func (r BoundedRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, "%s",
		BoundNote(format(note, args), MaxEventNote))
}

// format formats as the client's recorder does: a note without args is used as is.
func format(note string, args []any) string {
	if len(args) == 0 {
		return note
	}
	return fmt.Sprintf(note, args...)
}

// BoundNote returns s when it has at most max bytes; otherwise its first lines that fit,
// followed by "… and N more lines" (N the lines left out). A first line longer than the
// limit is itself cut at a character boundary and ends with "…".
func BoundNote(s string, max int) string {
	if len(s) <= max {
		return s
	}
	lines := strings.Split(s, "\n")
	marker := func(rest int) string {
		if rest == 0 {
			return ""
		}
		if rest == 1 {
			return "\n… and 1 more line"
		}
		return fmt.Sprintf("\n… and %d more lines", rest)
	}
	var b strings.Builder
	kept := 0
	for kept < len(lines) {
		add := len(lines[kept])
		if kept > 0 {
			add++
		}
		if b.Len()+add+len(marker(len(lines)-kept-1)) > max {
			break
		}
		if kept > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(lines[kept])
		kept++
	}
	if kept > 0 {
		return b.String() + marker(len(lines)-kept)
	}
	tail := "…" + marker(len(lines)-1)
	first := lines[0]
	cut := max - len(tail)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(first[cut]) {
		cut--
	}
	return first[:cut] + tail
}
