package helm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"helm.sh/helm/v4/pkg/engine"
)

// Limits bound what one render may take: a chart is tenant input, and Helm's template
// engine has neither a context nor a memory bound of its own.
type Limits struct {
	// Timeout is the most a render may take (DefaultRenderTimeout).
	Timeout time.Duration
	// MaxOps bounds the elements the sequence functions (until, untilStep, seq) create,
	// all calls of one render together (DefaultMaxOps).
	MaxOps int64
	// MaxBytes bounds the bytes the growing string functions (repeat, indent, nindent,
	// join, replace, rand*) produce, all calls of one render together
	// (DefaultMaxBytes).
	MaxBytes int64
	// MaxSteps bounds the turns of range loops and the templates executed (defines
	// included), all of one render together (DefaultMaxSteps): a loop that calls no
	// function is charged too (see instrument).
	MaxSteps int64
	// MaxOutput bounds the bytes the templates write, text and printed values, all of
	// one render together (DefaultMaxOutput); what an include returns is counted where
	// it is written and again where it is printed.
	MaxOutput int64
	// Concurrent is the most renders at once in the process (DefaultConcurrentRenders);
	// a render waits for a slot (or for its context), namespaces served fairly (see
	// slotQueue).
	Concurrent int
	// MaxDecompressed bounds a chart's decompressed size, its vendored subcharts
	// (charts/*.tgz, recursively) counted in (DefaultMaxDecompressed).
	MaxDecompressed int64
	// MaxAbandoned bounds the renders given up at their deadline that still run (a
	// template looping without a function call cannot be stopped in process): each
	// frees its slot while there is room, so at most Concurrent + MaxAbandoned
	// templates run at once (DefaultMaxAbandonedRenders).
	MaxAbandoned int
}

// Defaults of Limits.
const (
	DefaultRenderTimeout     = 30 * time.Second
	DefaultMaxOps            = 1_000_000
	DefaultMaxBytes          = 64 << 20
	DefaultMaxSteps          = 1_000_000
	DefaultMaxOutput         = 64 << 20
	DefaultConcurrentRenders = 2
	DefaultMaxDecompressed   = 50 << 20
	// DefaultMaxAbandonedRenders is one: a second chart that loops forever keeps its
	// slot, and the operator's CPU is never taken by more than Concurrent + 1 of them.
	DefaultMaxAbandonedRenders = 1
)

var (
	limitsMu sync.Mutex
	limits   = Limits{}.withDefaults()
	slots    = newSlotQueue(DefaultConcurrentRenders)
	runaways = newAbandonedRenders(DefaultMaxAbandonedRenders)
)

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultRenderTimeout
	}
	if l.MaxOps <= 0 {
		l.MaxOps = DefaultMaxOps
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.Concurrent <= 0 {
		l.Concurrent = DefaultConcurrentRenders
	}
	if l.MaxDecompressed <= 0 {
		l.MaxDecompressed = DefaultMaxDecompressed
	}
	if l.MaxAbandoned <= 0 {
		l.MaxAbandoned = DefaultMaxAbandonedRenders
	}
	return l
}

// SetLimits sets the process's render limits (zero fields: the defaults). Call it at
// start-up, before any render (gitsync run does, from its flags).
func SetLimits(l Limits) {
	limitsMu.Lock()
	defer limitsMu.Unlock()
	limits = l.withDefaults()
	slots = newSlotQueue(limits.Concurrent)
	runaways = newAbandonedRenders(limits.MaxAbandoned)
}

func currentLimits() (Limits, *slotQueue, *abandonedRenders) {
	limitsMu.Lock()
	defer limitsMu.Unlock()
	return limits, slots, runaways
}

// ErrRenderLimit is a render stopped by one of its Limits.
var ErrRenderLimit = errors.New("the chart exceeds a render limit")

// budget is what one render has left; the template functions below charge it and check
// the render's deadline, so that a loop calling them stops there.
type budget struct {
	ctx                 context.Context
	mu                  sync.Mutex
	ops, bytes          int64
	maxOps, maxByte     int64
	steps, out          int64
	maxSteps, maxOutput int64
	// exceeded is the first limit the render hit (Helm's engine rewrites the errors of
	// template functions into text).
	exceeded error
}

func newBudget(ctx context.Context, l Limits) *budget {
	return &budget{ctx: ctx, maxOps: l.MaxOps, maxByte: l.MaxBytes, maxSteps: l.MaxSteps, maxOutput: l.MaxOutput}
}

func (b *budget) charge(ops, bytes int64) error {
	return b.chargeAll(ops, bytes, 0, 0)
}

// chargeAll charges list elements, string bytes, steps and output bytes, and checks the
// render's deadline.
func (b *budget) chargeAll(ops, bytes, steps, out int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exceeded != nil {
		return b.exceeded
	}
	var err error
	switch {
	case b.ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", ErrRenderLimit, context.Cause(b.ctx))
	case ops < 0 || bytes < 0 || steps < 0 || out < 0:
		err = fmt.Errorf("%w: a negative size", ErrRenderLimit)
	case b.ops+ops > b.maxOps:
		err = fmt.Errorf("%w: its templates create more than %d list elements (until, untilStep, seq)", ErrRenderLimit, b.maxOps)
	case b.bytes+bytes > b.maxByte:
		err = fmt.Errorf("%w: its templates build more than %d bytes of strings (repeat, indent, join, replace, rand…)", ErrRenderLimit, b.maxByte)
	case b.steps+steps > b.maxSteps:
		err = fmt.Errorf("%w: its templates loop more than %d times (range turns and templates executed)", ErrRenderLimit, b.maxSteps)
	case b.out+out > b.maxOutput:
		err = fmt.Errorf("%w: its templates write more than %d bytes", ErrRenderLimit, b.maxOutput)
	}
	if err != nil {
		if b.ctx.Err() == nil {
			b.exceeded = err
		}
		return err
	}
	b.ops, b.bytes, b.steps, b.out = b.ops+ops, b.bytes+bytes, b.steps+steps, b.out+out
	return nil
}

// limitErr is the limit the render hit, if any.
func (b *budget) limitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exceeded
}

// funcs are bounded versions of the sprig functions that can make a render loop or grow
// without end, and Helm's lookup bound to the render's context.
func (b *budget) funcs(lookup engine.ClientProvider) template.FuncMap {
	sp := sprig.TxtFuncMap()
	fm := template.FuncMap{
		"until": func(n int) ([]int, error) {
			if err := b.charge(int64(max(n, 0)), 0); err != nil {
				return nil, err
			}
			return sp["until"].(func(int) []int)(n), nil
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			n := 0
			if step != 0 && (stop-start)/step > 0 {
				n = (stop-start)/step + 1
			}
			if err := b.charge(int64(n), 0); err != nil {
				return nil, err
			}
			return sp["untilStep"].(func(int, int, int) []int)(start, stop, step), nil
		},
		"seq": func(params ...int) (string, error) {
			n := int64(0)
			if len(params) > 0 {
				lo, hi := 1, params[len(params)-1]
				if len(params) > 1 {
					lo = params[0]
				}
				n = int64(hi) - int64(lo)
				if n < 0 {
					n = -n
				}
				n++
			}
			if err := b.charge(n, 8*n); err != nil {
				return "", err
			}
			return sp["seq"].(func(...int) string)(params...), nil
		},
		"repeat": func(count int, s string) (string, error) {
			if err := b.charge(1, int64(max(count, 0))*int64(len(s))); err != nil {
				return "", err
			}
			return strings.Repeat(s, max(count, 0)), nil
		},
		"indent":  func(n int, s string) (string, error) { return b.indent(n, s, "") },
		"nindent": func(n int, s string) (string, error) { return b.indent(n, s, "\n") },
		"replace": func(old, new, src string) (string, error) {
			count := int64(strings.Count(src, old))
			if err := b.charge(1, int64(len(src))+count*int64(max(len(new)-len(old), 0))); err != nil {
				return "", err
			}
			return strings.ReplaceAll(src, old, new), nil
		},
		"join": func(sep string, v any) (string, error) {
			parts := strSlice(v)
			size := int64(len(sep) * len(parts))
			for _, p := range parts {
				size += int64(len(p))
			}
			if err := b.charge(int64(len(parts)), size); err != nil {
				return "", err
			}
			return strings.Join(parts, sep), nil
		},
	}
	for _, name := range []string{"randAlpha", "randAlphaNum", "randNumeric", "randAscii"} {
		fn := sp[name].(func(int) string)
		fm[name] = func(n int) (string, error) {
			if err := b.charge(1, int64(max(n, 0))); err != nil {
				return "", err
			}
			return fn(n), nil
		}
	}
	if lookup != nil {
		fm["lookup"] = b.lookup(lookup)
	}
	// Called by the instrumented templates (see instrument).
	fm[stepFunc] = func(steps, bytes int) (string, error) {
		return "", b.chargeAll(0, 0, int64(steps), int64(bytes))
	}
	fm[turnFunc] = func() (string, error) {
		return "", b.chargeAll(0, 0, 1, 0)
	}
	fm[outFunc] = func(v any) (string, error) {
		s, err := printedForm(v)
		if err != nil {
			return "", err
		}
		return s, b.chargeAll(0, 0, 0, int64(len(s)))
	}
	fm[sizeFunc] = b.sizeCharge
	fm[tplFunc] = func(text string) (string, error) {
		if err := b.chargeAll(0, int64(len(text)), 1, 0); err != nil {
			return "", err
		}
		return instrumentCached("tpl", text), nil
	}
	return fm
}

func (b *budget) indent(n int, s, prefix string) (string, error) {
	n = max(n, 0)
	lines := int64(strings.Count(s, "\n") + 1)
	if err := b.charge(1, int64(len(s))+lines*int64(n)); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", n)
	return prefix + pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// lookup is Helm's lookup (an object, or a list when name is empty; an empty map when
// not found) through provider, with the render's context.
func (b *budget) lookup(provider engine.ClientProvider) func(apiVersion, kind, namespace, name string) (map[string]any, error) {
	return func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		if err := b.charge(1, 0); err != nil {
			return map[string]any{}, err
		}
		c, namespaced, err := provider.GetClientFor(apiVersion, kind)
		if err != nil {
			return map[string]any{}, err
		}
		var rc dynamic.ResourceInterface = c
		if namespaced && namespace != "" {
			rc = c.Namespace(namespace)
		}
		if name != "" {
			obj, err := rc.Get(b.ctx, name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					return map[string]any{}, nil
				}
				return map[string]any{}, err
			}
			return obj.UnstructuredContent(), nil
		}
		list, err := rc.List(b.ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return map[string]any{}, nil
			}
			return map[string]any{}, err
		}
		return list.UnstructuredContent(), nil
	}
}

// strSlice is sprig's conversion of join's argument to strings.
func strSlice(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			if s != nil {
				out = append(out, strVal(s))
			}
		}
		return out
	}
	val := reflect.ValueOf(v)
	switch val.Kind() {
	case reflect.Array, reflect.Slice:
		out := make([]string, 0, val.Len())
		for i := 0; i < val.Len(); i++ {
			if e := val.Index(i).Interface(); e != nil {
				out = append(out, strVal(e))
			}
		}
		return out
	case reflect.Invalid:
		return []string{}
	}
	return []string{strVal(v)}
}

func strVal(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}

// limitCause is the error to report for a render stopped by a limit: the template's
// error (which names the file and line) unless the deadline came first.
func limitCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}
