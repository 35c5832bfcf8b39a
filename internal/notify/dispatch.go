package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
)

// Options tune the dispatcher; zero values take the defaults.
type Options struct {
	// QueueSize bounds the deliveries waiting per Provider (100); when full, the oldest
	// is dropped and counted.
	QueueSize int
	// Dedup is the interval within which the same event of the same object and revision
	// is sent once (5m).
	Dedup time.Duration
	// RetryBase and RetryMax bound the exponential backoff between attempts (1s, 1m);
	// Attempts is the most tries per delivery (5).
	RetryBase, RetryMax time.Duration
	Attempts            int
	// Idle is how long a Provider's worker waits for a message before it stops (10m).
	Idle time.Duration
	// Rate is the most deliveries per second per Provider (5), with a burst of 2×Rate.
	Rate float64
	// Egress guards every address a Provider's delivery dials (spec.address, the
	// Secret's address, spec.proxy, and each redirect hop); nil: no guard.
	Egress *egress.Guard
	// SecretAccess, in tenant mode, is asked before a Provider's spec.secretRef is read
	// with the operator's identity: may the namespace's tenant account get it? nil: no
	// check (see docs/security.md).
	SecretAccess SecretChecker
	// OnResult is called after a Provider's delivery finished (delivered or given up).
	OnResult func(provider types.NamespacedName)
	Now      func() time.Time
}

// SecretChecker tells whether the tenant of namespace may read the Secret name; an error
// refuses (sources.SecretAccess in tenant mode).
type SecretChecker interface {
	CheckSecret(ctx context.Context, namespace, name string) error
}

// Dispatcher receives events (Handle never blocks), matches them against Alerts and
// delivers them through per-Provider queues.
type Dispatcher struct {
	// Reader reads Alerts, Providers, Applications and GitRepositories (cached).
	Reader client.Reader
	// Secrets reads Provider and source Secrets (uncached).
	Secrets client.Reader
	Log     logr.Logger
	opts    Options

	intake chan Event

	mu      sync.Mutex
	ctx     context.Context
	workers map[types.NamespacedName]*worker
	sent    map[string]time.Time
	results map[types.NamespacedName]Result
}

// Result is the outcome of a Provider's last finished delivery.
type Result struct {
	Time time.Time
	// Err is the reason of a failed delivery (a status code, a network error), "" on success.
	Err string
}

// NewDispatcher returns a dispatcher; Start runs it.
func NewDispatcher(reader, secrets client.Reader, opts Options) *Dispatcher {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 100
	}
	if opts.Dedup <= 0 {
		opts.Dedup = 5 * time.Minute
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = time.Minute
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 5
	}
	if opts.Idle <= 0 {
		opts.Idle = 10 * time.Minute
	}
	if opts.Rate <= 0 {
		opts.Rate = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Dispatcher{
		Reader: reader, Secrets: secrets, Log: logr.Discard(), opts: opts,
		intake:  make(chan Event, 1024),
		workers: map[types.NamespacedName]*worker{},
		sent:    map[string]time.Time{},
		results: map[types.NamespacedName]Result{},
	}
}

// Handle takes an event for routing. It never blocks: when the intake is full (routing
// cannot keep up) the event is dropped and counted.
func (d *Dispatcher) Handle(ev Event) {
	select {
	case d.intake <- ev:
	default:
		deliveries.WithLabelValues("", resultDropped).Inc()
	}
}

// LastResult returns the outcome of the Provider's last finished delivery.
func (d *Dispatcher) LastResult(provider types.NamespacedName) (Result, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.results[provider]
	return r, ok
}

// Start routes events until ctx ends (a manager.Runnable).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	ticker := time.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-d.intake:
			d.route(ctx, ev)
		case <-ticker.C:
			d.forgetOld()
		}
	}
}

// NeedLeaderElection: only the leader reconciles, so only it records events to route.
func (d *Dispatcher) NeedLeaderElection() bool { return true }

// route matches an event against the Alerts of its namespace and queues a delivery per
// matching Alert.
func (d *Dispatcher) route(ctx context.Context, ev Event) {
	alerts := &gitsyncv1.AlertList{}
	if err := d.Reader.List(ctx, alerts, client.InNamespace(ev.Namespace)); err != nil {
		d.Log.Error(err, "listing alerts", "namespace", ev.Namespace)
		return
	}
	var urls map[string]string
	for i := range alerts.Items {
		alert := &alerts.Items[i]
		provider := &gitsyncv1.Provider{}
		key := types.NamespacedName{Namespace: alert.Namespace, Name: alert.Spec.ProviderRef.Name}
		if alert.Spec.Suspend || d.Reader.Get(ctx, key, provider) != nil || provider.Spec.Suspend {
			continue
		}
		if urls == nil {
			urls = d.repoURLs(ctx, ev)
		}
		for _, m := range d.messages(ctx, alert, provider, ev, urls) {
			d.enqueue(key, provider.Spec.Type, m)
		}
	}
}

// repoURLs are the URLs of the event's GitRepositories in its namespace, by name ("" for
// one that cannot be read): only a Git source has a URL that names commits (and a forge
// to set statuses on). A source of another namespace is not read.
func (d *Dispatcher) repoURLs(ctx context.Context, ev Event) map[string]string {
	urls := map[string]string{}
	for _, s := range ev.Sources {
		if _, seen := urls[s.Name]; seen || s.Kind != gitsyncv1.GitRepositoryKind || s.Namespace != ev.Namespace {
			continue
		}
		repo := &gitsyncv1.GitRepository{}
		if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: ev.Namespace, Name: s.Name}, repo); err == nil {
			urls[s.Name] = repo.Spec.URL
		} else {
			urls[s.Name] = ""
		}
	}
	return urls
}

// repoURL is the URL of one of the event's sources, when it is a GitRepository of the
// event's namespace (repoURLs).
func repoURL(urls map[string]string, ev Event, s EventSource) string {
	if s.Kind != gitsyncv1.GitRepositoryKind || s.Namespace != ev.Namespace {
		return ""
	}
	return urls[s.Name]
}

// messages are the deliveries one Alert makes of an event: one chat message (naming each
// source's revision when the revision joins several); for a commit status provider, the
// state of an Application's sync (success, failure, error) on the commit of each of its
// Git sources, or `pending` for each matched Application that follows a GitRepository
// with a new artifact. A revision that names no commit (a chart version of a
// HelmRepository, an OCI artifact) gets no status.
func (d *Dispatcher) messages(ctx context.Context, alert *gitsyncv1.Alert, p *gitsyncv1.Provider, ev Event, urls map[string]string) []Message {
	base := Message{Summary: alert.Spec.Summary}
	if ev.Joined() {
		for _, s := range ev.Sources {
			base.Sources = append(base.Sources, SourceFact{Source: s.ID, Revision: s.Revision,
				CommitURL: CommitURL(repoURL(urls, ev, s), Commit(s.Revision))})
		}
	} else if len(ev.Sources) == 1 {
		base.RepoURL = repoURL(urls, ev, ev.Sources[0])
		base.CommitURL = CommitURL(base.RepoURL, Commit(ev.Revision))
	}
	if !commitStatus(p.Spec.Type) {
		ok, err := Match(alert, ev)
		if err != nil || !ok {
			return nil
		}
		base.Event = ev
		return []Message{base}
	}
	switch {
	case ev.Kind == gitsyncv1.ApplicationKind && ev.Action == "Sync":
		if ok, err := Match(alert, ev); err != nil || !ok {
			return nil
		}
		state := StateSuccess
		if ev.Warning() {
			state = failureState(ev.Reason)
		}
		var out []Message
		for _, s := range ev.Sources {
			if s.Kind != gitsyncv1.GitRepositoryKind || Commit(s.Revision) == "" {
				continue
			}
			m := base
			m.Event, m.State, m.Context = ev, state, statusContext(ev.Namespace, ev.Name)
			m.Event.Revision = s.Revision // the commit the status is set on
			m.RepoURL = repoURL(urls, ev, s)
			m.CommitURL = CommitURL(m.RepoURL, Commit(s.Revision))
			out = append(out, m)
		}
		if len(out) == 0 {
			d.Log.V(1).Info("no commit status: the revision names no commit", "object", ev.Subject(), "revision", ev.Revision)
		}
		return out
	case ev.Kind == gitsyncv1.GitRepositoryKind && ev.Reason == "NewArtifact":
		if alert.Spec.EventSeverity == gitsyncv1.SeverityError || alert.Spec.Suspend {
			return nil
		}
		apps := &gitsyncv1.ApplicationList{}
		if err := d.Reader.List(ctx, apps, client.InNamespace(ev.Namespace)); err != nil {
			return nil
		}
		var out []Message
		for i := range apps.Items {
			app := &apps.Items[i]
			if !followsRepo(app, ev.Name) {
				continue
			}
			appEv := ev
			appEv.Kind, appEv.Name, appEv.Labels, appEv.Reason = gitsyncv1.ApplicationKind, app.Name, app.Labels, "Progressing"
			appEv.Message = "syncing revision " + ev.Revision
			if !SourceMatch(alert, appEv) {
				continue
			}
			m := base
			m.Event, m.State, m.Context = appEv, StatePending, statusContext(app.Namespace, app.Name)
			out = append(out, m)
		}
		return out
	}
	return nil
}

// followsRepo reports whether one of the Application's sources (spec.sourceRef or
// any of spec.sources) is the GitRepository name of its own namespace.
func followsRepo(app *gitsyncv1.Application, name string) bool {
	for _, src := range app.SourceList() {
		ref := src.SourceRef
		if ref.Name == name && (ref.Kind == "" || ref.Kind == gitsyncv1.GitRepositoryKind) &&
			(ref.Namespace == "" || ref.Namespace == app.Namespace) {
			return true
		}
	}
	return false
}

func commitStatus(t string) bool {
	return t == gitsyncv1.ProviderGitHub || t == gitsyncv1.ProviderGitLab || t == gitsyncv1.ProviderGitea
}

func statusContext(namespace, name string) string { return "gitsync/" + namespace + "/" + name }

// failureState: a revision that cannot be synced as committed is a `failure`; anything
// else (the API server, a timeout) an `error`.
func failureState(reason string) string {
	switch reason {
	case gitsyncv1.BuildFailedReason, gitsyncv1.ApplyFailedReason, gitsyncv1.PruneFailedReason, gitsyncv1.HealthCheckFailedReason:
		return StateFailure
	}
	return StateError
}

// enqueue hands a message to the Provider's worker unless the same one was sent within
// the dedup interval.
func (d *Dispatcher) enqueue(provider types.NamespacedName, typ string, m Message) {
	h := sha256.Sum256([]byte(m.Event.Type + "\x00" + m.Event.Reason + "\x00" + m.Event.Message + "\x00" + m.State))
	key := provider.String() + "|" + m.Event.Subject() + "|" + m.Event.Revision + "|" + hex.EncodeToString(h[:8])
	now := d.opts.Now()
	d.mu.Lock()
	if t, ok := d.sent[key]; ok && now.Sub(t) < d.opts.Dedup {
		d.mu.Unlock()
		deliveries.WithLabelValues(typ, resultDeduplicated).Inc()
		return
	}
	d.sent[key] = now
	defer d.mu.Unlock()
	w := d.workers[provider]
	if w == nil {
		w = newWorker(d, provider, typ)
		d.workers[provider] = w
		go w.run(d.ctx)
	}
	w.push(m) // under d.mu: an idle worker leaves only with an empty queue (retire)
}

// retire removes an idle worker whose queue is empty; false when a message came in.
func (d *Dispatcher) retire(w *worker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.Len() > 0 {
		return false
	}
	delete(d.workers, w.provider)
	return true
}

func (d *Dispatcher) forgetOld() {
	now := d.opts.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, t := range d.sent {
		if now.Sub(t) >= d.opts.Dedup {
			delete(d.sent, k)
		}
	}
}

func (d *Dispatcher) finished(provider types.NamespacedName, errText string) {
	d.mu.Lock()
	prev, had := d.results[provider]
	d.results[provider] = Result{Time: d.opts.Now(), Err: errText}
	d.mu.Unlock()
	if d.opts.OnResult != nil && (!had || prev.Err != errText) {
		d.opts.OnResult(provider)
	}
}

// Queued is the number of messages waiting in the Provider's queue.
func (d *Dispatcher) Queued(provider types.NamespacedName) int {
	d.mu.Lock()
	w := d.workers[provider]
	d.mu.Unlock()
	if w == nil {
		return 0
	}
	return w.Len()
}

// Running reports whether the Provider has a worker (it stops after Options.Idle without messages).
func (d *Dispatcher) Running(provider types.NamespacedName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.workers[provider] != nil
}
