package bench

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// pushTrace records, while on, the requests the operator sends to the API server and
// the requests the Git server answers, each with its start and end, so that a push's
// path can be read off (GITSYNC_BENCH_TRACE=1). Off, it records nothing.
type pushTrace struct {
	on bool

	mu    sync.Mutex
	start time.Time // zero: not recording
	spans []span
}

type span struct {
	from, to time.Duration
	what     string
}

func newPushTrace() *pushTrace { return &pushTrace{on: os.Getenv("GITSYNC_BENCH_TRACE") != ""} }

// begin starts a new recording, from now.
func (t *pushTrace) begin() {
	if !t.on {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start, t.spans = time.Now(), nil
}

// add records what happened from start to now.
func (t *pushTrace) add(what string, start time.Time) {
	if !t.on {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() {
		return
	}
	t.spans = append(t.spans, span{from: start.Sub(t.start), to: now.Sub(t.start), what: what})
}

// end stops the recording and logs it, ordered by start.
func (t *pushTrace) end(b *testing.B, title string) {
	if !t.on {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.SortFunc(t.spans, func(a, b span) int { return int(a.from - b.from) })
	var s strings.Builder
	for _, sp := range t.spans {
		fmt.Fprintf(&s, "\n  %6.2f – %6.2f ms  %s", ms(sp.from), ms(sp.to), sp.what)
	}
	b.Logf("%s:%s", title, s.String())
	t.start = time.Time{}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// gitServed is a gittest.Options.Served that records each Git request.
func (t *pushTrace) gitServed(method, path string, arrived time.Time) {
	t.add("git "+method+" "+path, arrived)
}

// wrap is a rest.Config.WrapTransport that records each API request: its verb, its
// resource and name, and "dry-run" for a dry-run.
func (t *pushTrace) wrap(rt http.RoundTripper) http.RoundTripper {
	if !t.on {
		return rt
	}
	return promhttp.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := rt.RoundTrip(r)
		what := "api " + r.Method + " " + resourcePath(r.URL.Path)
		if r.URL.Query().Has("dryRun") {
			what += " (dry-run)"
		}
		t.add(what, start)
		return resp, err
	})
}

// resourcePath is path from its resource on: /api/v1/namespaces/ns/configmaps/x is
// configmaps/x.
func resourcePath(path string) string {
	if _, rest, ok := strings.Cut(path, "/namespaces/"); ok {
		if _, rest, ok := strings.Cut(rest, "/"); ok {
			return rest
		}
	}
	return path
}
