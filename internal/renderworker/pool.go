package renderworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// Defaults of `gitsync run`'s --render-* flags.
const (
	DefaultWorkers = 2
	// DefaultMemory is the data segment a worker may use. The largest chart measured,
	// kube-prometheus-stack with its four dependencies vendored (132 objects), peaked at a
	// 203 MB data segment and 110 MB resident in a worker (an idle worker: 115 MB and
	// 54 MB; docs/render-isolation.md): 512 MiB leaves it 2.5 times room.
	DefaultMemory    = 512 << 20
	DefaultTimeout   = 60 * time.Second
	DefaultMaxOutput = 64 << 20
	// DefaultFileBytes: a render writes no file.
	DefaultFileBytes = 1 << 20
	DefaultOpenFiles = 256
)

// Options configure a Pool.
type Options struct {
	// Binary is the gitsync binary the workers run (`render-worker`); the running
	// executable when empty.
	Binary string
	// Args are more flags for `gitsync render-worker` (the chart limits).
	Args []string
	// Workers is how many workers are kept warm (DefaultWorkers when zero).
	Workers int
	// Bounds are each worker's kernel bounds (the defaults for zero fields).
	Bounds Bounds
	// Timeout is a render's wall-clock deadline, lowered to the Application's
	// spec.timeout when that is shorter; CPU is the CPU time it may use (Timeout when
	// zero).
	Timeout, CPU time.Duration
	// MaxOutput bounds what one render returns, and any message of a worker (bytes).
	MaxOutput int64
	// StartTimeout bounds a worker's start (10s when zero).
	StartTimeout time.Duration
	// NoNetworkNamespace keeps workers in the operator's network namespace; otherwise
	// each gets one of its own when the kernel allows it (a warning says when not).
	NoNetworkNamespace bool
	Log                logr.Logger
}

func (o *Options) defaults() error {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the gitsync binary for the render workers: %w", err)
		}
		o.Binary = exe
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Bounds.Memory == 0 {
		o.Bounds.Memory = DefaultMemory
	}
	if o.Bounds.FileBytes == 0 {
		o.Bounds.FileBytes = DefaultFileBytes
	}
	if o.Bounds.OpenFiles == 0 {
		o.Bounds.OpenFiles = DefaultOpenFiles
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CPU <= 0 {
		o.CPU = o.Timeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	return nil
}

// Pool renders Applications in worker processes: Render has render.Render's signature.
// It keeps Options.Workers workers warm; a worker that breaks a bound or dies fails that
// render only and is replaced. Workers go round-robin to the namespaces waiting for one,
// so that one tenant's slow renders hold at most its turn.
type Pool struct {
	opts Options

	mu      sync.Mutex
	idle    []*worker
	running int // started or starting
	queue   fairQueue
	closed  bool
	isolate bool
}

// New makes a pool; Start (a manager Runnable) warms it, and Render starts workers on
// demand too.
func New(opts Options) (*Pool, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Pool{opts: opts, isolate: !opts.NoNetworkNamespace}, nil
}

// Start warms the pool, then stops every worker when ctx ends.
func (p *Pool) Start(ctx context.Context) error {
	for i := 0; i < p.opts.Workers; i++ {
		w, err := p.spawn()
		if err != nil {
			p.opts.Log.Error(err, "starting a render worker")
			break
		}
		p.release(w)
	}
	<-ctx.Done()
	p.Close()
	return nil
}

// Close stops every idle worker; busy ones stop when their render ends.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.kill()
	}
}

// spawn starts a worker, counting it live; without a network namespace of its own when
// the kernel refuses one.
func (p *Pool) spawn() (*worker, error) {
	p.mu.Lock()
	p.running++
	isolate := p.isolate
	p.mu.Unlock()
	w, err := start(&p.opts, isolate)
	if err != nil && isolate {
		if w, err = start(&p.opts, false); err == nil {
			p.mu.Lock()
			p.isolate = false
			p.mu.Unlock()
			p.opts.Log.Info("render workers run without a network namespace of their own: the kernel refused one")
		}
	}
	if err != nil {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}
	return w, err
}

// acquire takes a worker for a render of namespace ns: an idle one, a new one while
// fewer than Workers live, or the next one released to ns's turn.
func (p *Pool) acquire(ctx context.Context, ns string) (*worker, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return w, nil
	}
	if p.running < p.opts.Workers {
		p.mu.Unlock()
		return p.spawn()
	}
	wait := p.queue.push(ns)
	p.mu.Unlock()
	select {
	case w := <-wait:
		return w, nil
	case <-ctx.Done():
		p.mu.Lock()
		removed := p.queue.remove(ns, wait)
		p.mu.Unlock()
		if !removed { // handed a worker meanwhile: pass it on
			p.release(<-wait)
		}
		return nil, ctx.Err()
	}
}

// release gives w to the next namespace waiting, or keeps it idle.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		go w.kill()
		p.running--
		return
	}
	if wait := p.queue.pop(); wait != nil {
		wait <- w
		return
	}
	p.idle = append(p.idle, w)
}

// discard stops a broken worker and starts its replacement for whoever waits.
func (p *Pool) discard(w *worker) {
	w.kill()
	p.mu.Lock()
	p.running--
	refill := !p.closed && p.queue.waits()
	p.mu.Unlock()
	if refill {
		go func() {
			if nw, err := p.spawn(); err == nil {
				p.release(nw)
			} else {
				p.opts.Log.Error(err, "replacing a render worker")
			}
		}()
	}
}

// live acquires a worker that still runs: one that ended while idle (killed from
// outside) is replaced rather than failing a render.
func (p *Pool) live(ctx context.Context, ns string) (*worker, error) {
	for {
		w, err := p.acquire(ctx, ns)
		if err != nil {
			return nil, err
		}
		select {
		case <-w.done:
			p.discard(w)
		default:
			return w, nil
		}
	}
}

// Render renders app from src in a worker, serving what it takes from cluster (nil:
// offline) over the worker's channel. A render that breaks a bound returns a
// *render.LimitError; the worker is then replaced.
func (p *Pool) Render(ctx context.Context, app *gitsyncv1.Application, src render.Source, cluster *render.Cluster) (*render.Result, error) {
	timeout := p.opts.Timeout
	if app.Spec.Timeout != nil && app.Spec.Timeout.Duration > 0 && app.Spec.Timeout.Duration < timeout {
		timeout = app.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := p.live(ctx, app.Namespace)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("waiting %s for a free render worker: %w", timeout, err)
		}
		return nil, err
	}
	res, err, healthy := p.renderIn(ctx, w, app, src, cluster, timeout)
	if healthy {
		p.release(w)
	} else {
		p.discard(w)
	}
	return res, err
}

// renderIn runs one render in w; healthy says whether w may render again.
func (p *Pool) renderIn(ctx context.Context, w *worker, app *gitsyncv1.Application, src render.Source, cluster *render.Cluster, timeout time.Duration) (*render.Result, error, bool) {
	appJSON, err := json.Marshal(forWorker(app))
	if err != nil {
		return nil, fmt.Errorf("encoding the Application for its render: %w", err), true
	}
	w.stderr.reset()
	_ = w.out.SetReadDeadline(time.Time{}) // a deadline its last render's context set
	req := &renderRequest{App: appJSON, Source: src, Has: partsOf(cluster), Offline: cluster == nil,
		CPUSeconds: uint64(p.opts.CPU.Seconds() + 0.999)}
	stop := context.AfterFunc(ctx, func() { _ = w.out.SetReadDeadline(time.Now()) })
	defer stop()
	if err := writeFrame(w.in, &message{Kind: kindRender, Render: req}); err != nil {
		return nil, w.failure(&p.opts), false
	}
	srv := &server{cluster: cluster}
	for {
		m, err := readFrame(w.out, p.opts.MaxOutput)
		switch {
		case err == nil:
		case errors.Is(err, errFrameTooLarge):
			return nil, &render.LimitError{Bound: render.BoundOutput, Limit: formatBytes(p.opts.MaxOutput)}, false
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, &render.LimitError{Bound: render.BoundTimeout, Limit: timeout.String()}, false
		case ctx.Err() != nil:
			return nil, ctx.Err(), false
		default:
			return nil, w.failure(&p.opts), false
		}
		switch {
		case m.Kind == kindCall && m.Call != nil:
			if err := writeFrame(w.in, &message{Kind: kindReply, Reply: srv.serve(ctx, m.Call)}); err != nil {
				return nil, w.failure(&p.opts), false
			}
		case m.Kind == kindResult && m.Result != nil:
			res, err := resultOf(m.Result, cluster == nil)
			return res, err, true
		default:
			return nil, fmt.Errorf("the render worker sent a %s frame", m.Kind), false
		}
	}
}

// forWorker is what a render reads of app: its spec, and whether it has an inventory
// (Helm's .Release.IsUpgrade); not its status, which can be long.
func forWorker(app *gitsyncv1.Application) *gitsyncv1.Application {
	out := &gitsyncv1.Application{TypeMeta: app.TypeMeta, Spec: app.Spec}
	out.Name, out.Namespace, out.UID = app.Name, app.Namespace, app.UID
	if inv := app.Status.Inventory; inv != nil && len(inv.Entries) > 0 {
		out.Status.Inventory = &gitsyncv1.Inventory{Entries: inv.Entries[:1]}
	}
	return out
}

// resultOf turns a worker's result into render.Render's.
func resultOf(r *result, offline bool) (*render.Result, error) {
	if r.Err != nil {
		return nil, r.Err.toError()
	}
	out := &render.Result{
		Offline:   offline,
		Encrypted: r.Encrypted,
		Sensitive: r.Sensitive,
		Chart:     render.Chart{Name: r.Chart.Name, Version: r.Chart.Version, CRDs: r.Chart.CRDs, CreateOnly: r.Chart.CreateOnly},
		Objects:   make([]*unstructured.Unstructured, 0, len(r.Objects)),
	}
	for _, raw := range r.Objects {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding a rendered object: %w", err)
		}
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}
