package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
)

// abandonedRenders are the renders given up at their deadline whose template still runs:
// Go's template engine has no way to stop a loop that calls no function (a range over
// a list made once, with a constant body), so its goroutine runs to the end. Up to max
// of them give their render slot back; each is known by its chart and values, so that
// the retries of one Application do not start the same endless render again.
type abandonedRenders struct {
	mu      sync.Mutex
	max     int
	running map[string]bool
}

func newAbandonedRenders(max int) *abandonedRenders {
	return &abandonedRenders{max: max, running: map[string]bool{}}
}

// add records key as abandoned unless max are already; false: keep the slot.
func (a *abandonedRenders) add(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.running) >= a.max || a.running[key] {
		return false
	}
	a.running[key] = true
	return true
}

func (a *abandonedRenders) done(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, key)
}

func (a *abandonedRenders) has(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running[key]
}

func (a *abandonedRenders) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.running)
}

// RenderSlotsInUse is the number of render slots taken now (at most Limits.Concurrent).
func RenderSlotsInUse() int {
	_, slots, _ := currentLimits()
	n, _ := slots.stats()
	return n
}

// AbandonedRenders is the number of renders given up at their deadline whose template
// still runs (at most Limits.MaxAbandoned).
func AbandonedRenders() int {
	_, _, a := currentLimits()
	return a.count()
}

// renderKey identifies a render by its charts' templates and its values; "" when the
// values cannot be hashed (then no abandoned render is recognised).
func renderKey(c *chart.Chart, vals common.Values) string {
	h := sha256.New()
	var add func(c *chart.Chart)
	add = func(c *chart.Chart) {
		fmt.Fprintf(h, "chart %q %q\n", c.Name(), c.Metadata.Version)
		for _, t := range c.Templates {
			fmt.Fprintf(h, "%q %d\n", t.Name, len(t.Data))
			h.Write(t.Data)
		}
		deps := c.Dependencies()
		sort.Slice(deps, func(i, j int) bool { return deps[i].Name() < deps[j].Name() })
		for _, d := range deps {
			add(d)
		}
	}
	add(c)
	values, err := json.Marshal(vals["Values"])
	if err != nil {
		return ""
	}
	h.Write(values)
	release, _ := json.Marshal(vals["Release"])
	h.Write(release)
	return hex.EncodeToString(h.Sum(nil))
}

// renderBounded renders c within the process's Limits: it waits for a render slot (in
// tenant's turn), then
// runs Helm's engine with the bounded functions and returns at the deadline at the
// latest. A template that loops without calling any function goes on in the background:
// its slot is given back while fewer than Limits.MaxAbandoned such renders run (kept
// otherwise, so that they cannot pile up), and the same chart and values are refused at
// once until it ends.
func renderBounded(ctx context.Context, tenant string, c *chart.Chart, vals common.Values, lookup engine.ClientProvider) (map[string]string, error) {
	l, slots, runaways := currentLimits()
	key := renderKey(c, vals)
	if key != "" && runaways.has(key) {
		return nil, fmt.Errorf("rendering: %w: an earlier render of this chart with these values is still running after its deadline (%s): its templates loop without end",
			ErrRenderLimit, l.Timeout)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, l.Timeout, fmt.Errorf("the render took longer than %s", l.Timeout))
	defer cancel()
	releaseSlot, err := slots.acquire(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("waiting for a render slot: %w", err)
	}
	var (
		mu                  sync.Mutex
		finished, abandoned bool
	)
	b := newBudget(ctx, l)
	rc := instrumentChart(c)
	type result struct {
		files map[string]string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		files, err := engine.Engine{CustomTemplateFuncs: b.funcs(lookup)}.RenderWithContext(ctx, rc, vals)
		if err == nil {
			err = checkOutput(files, l.MaxOutput)
		}
		done <- result{files, err}
		mu.Lock()
		finished = true
		wasAbandoned := abandoned
		mu.Unlock()
		releaseSlot()
		if wasAbandoned {
			runaways.done(key)
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			// A budget's limit is told with where the template was, without the
			// instrumentation's calls (see instrument) Helm's message would quote.
			if limit := b.limitErr(); limit != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("rendering: %w%s", limit, templateLocation(r.err))
			}
			if errors.Is(r.err, ErrRenderLimit) || ctx.Err() != nil {
				return nil, fmt.Errorf("rendering: %w: %w", ErrRenderLimit, limitCause(ctx, r.err))
			}
			return nil, fmt.Errorf("rendering: %w", r.err)
		}
		return r.files, nil
	case <-ctx.Done():
		select {
		case r := <-done:
			if r.err == nil {
				return r.files, nil
			}
		default:
		}
		mu.Lock()
		if !finished && key != "" {
			abandoned = runaways.add(key)
		}
		mu.Unlock()
		if abandoned {
			releaseSlot()
		}
		return nil, fmt.Errorf("rendering: %w: %w", ErrRenderLimit, context.Cause(ctx))
	}
}

// checkOutput fails when the rendered files hold more than max bytes together.
func checkOutput(files map[string]string, max int64) error {
	var total int64
	for _, f := range files {
		if total += int64(len(f)); total > max {
			return fmt.Errorf("%w: its templates write more than %d bytes", ErrRenderLimit, max)
		}
	}
	return nil
}

// templateFile is the first "file:line" of a template error.
var templateFile = regexp.MustCompile(`[\w.@/-]+/templates/[\w.@/-]+:\d+`)

// templateLocation is " (at file:line)" for the first template file err names, or "".
func templateLocation(err error) string {
	if loc := templateFile.FindString(err.Error()); loc != "" {
		return " (at " + loc + ")"
	}
	return ""
}
