package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/forge"
)

// worker delivers one Provider's messages in order, from a bounded queue.
type worker struct {
	d        *Dispatcher
	provider types.NamespacedName
	typ      string
	limiter  *rate.Limiter

	mu    sync.Mutex
	queue []Message
	wake  chan struct{}
}

func newWorker(d *Dispatcher, provider types.NamespacedName, typ string) *worker {
	return &worker{
		d: d, provider: provider, typ: typ,
		limiter: rate.NewLimiter(rate.Limit(d.opts.Rate), int(2*d.opts.Rate)+1),
		wake:    make(chan struct{}, 1),
	}
}

// push queues a message; a full queue drops its oldest message.
func (w *worker) push(m Message) {
	w.mu.Lock()
	if len(w.queue) >= w.d.opts.QueueSize {
		w.queue = w.queue[1:]
		deliveries.WithLabelValues(w.typ, resultDropped).Inc()
	}
	w.queue = append(w.queue, m)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Len is the number of queued messages.
func (w *worker) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

func (w *worker) pop() (Message, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return Message{}, false
	}
	m := w.queue[0]
	w.queue = w.queue[1:]
	return m, true
}

func (w *worker) run(ctx context.Context) {
	for {
		m, ok := w.pop()
		if !ok {
			idle := time.NewTimer(w.d.opts.Idle)
			select {
			case <-ctx.Done():
				idle.Stop()
				return
			case <-w.wake:
				idle.Stop()
				continue
			case <-idle.C:
				if w.d.retire(w) {
					return
				}
				continue
			}
		}
		if err := w.limiter.Wait(ctx); err != nil {
			return
		}
		err := w.deliver(ctx, m)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			deliveries.WithLabelValues(w.typ, resultFailed).Inc()
			w.d.Log.Info("notification not delivered", "provider", w.provider, "error", err.Error())
			w.d.finished(w.provider, err.Error())
			continue
		}
		deliveries.WithLabelValues(w.typ, resultDelivered).Inc()
		w.d.finished(w.provider, "")
	}
}

// permanent marks an error that a retry cannot fix (a 4xx answer, a bad spec).
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// deliver sends a message, retrying 5xx answers and network errors with exponential
// backoff. The returned error never holds a Secret value or the delivery URL.
func (w *worker) deliver(ctx context.Context, m Message) error {
	delay := w.d.opts.RetryBase
	var err error
	for attempt := 1; attempt <= w.d.opts.Attempts; attempt++ {
		err = w.attempt(ctx, m)
		var p permanent
		if err == nil || errors.As(err, &p) {
			return err
		}
		if attempt == w.d.opts.Attempts {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, w.d.opts.RetryMax)
	}
	return fmt.Errorf("after %d attempts: %w", w.d.opts.Attempts, err)
}

func (w *worker) attempt(ctx context.Context, m Message) error {
	p := &gitsyncv1.Provider{}
	if err := w.d.Reader.Get(ctx, w.provider, p); err != nil {
		return permanent{fmt.Errorf("reading provider: %w", err)}
	}
	if p.Spec.Suspend {
		return nil
	}
	var secretName string
	if p.Spec.SecretRef != nil {
		secretName = p.Spec.SecretRef.Name
		if check := w.d.opts.SecretAccess; check != nil {
			if err := check.CheckSecret(ctx, p.Namespace, secretName); err != nil {
				return permanent{fmt.Errorf("reading Secret %s: %w", secretName, err)}
			}
		}
	}
	secret, err := w.readSecret(ctx, p.Namespace, secretName)
	if err != nil {
		return permanent{err}
	}
	target := Target{Type: p.Spec.Type, Address: p.Spec.Address, Channel: p.Spec.Channel}
	if a := string(secret["address"]); a != "" {
		target.Address = strings.TrimSpace(a)
	}
	target.Token = strings.TrimSpace(string(secret["token"]))
	if h := secret["headers"]; len(h) > 0 {
		if err := yaml.Unmarshal(h, &target.Headers); err != nil {
			return permanent{fmt.Errorf("the Secret's headers are not a YAML map of strings")}
		}
	}
	// Redact every value of the Provider's Secret and of the source's Secrets.
	values := secretValues(secret)
	for _, name := range w.sourceSecrets(ctx, m) {
		s, err := w.readSecret(ctx, p.Namespace, name)
		if err == nil {
			values = append(values, secretValues(s)...)
		}
	}
	m.Event.Message, m.Summary = redact(m.Event.Message, values), redact(m.Summary, values)

	client, err := httpClient(p, secret["ca.crt"], w.d.opts.Egress)
	if err != nil {
		return permanent{err}
	}
	defer client.CloseIdleConnections()
	req, err := Request(ctx, target, m)
	if err != nil {
		return permanent{err}
	}
	// Through a tenant's proxy only the proxy is dialled here: check an IP literal too.
	if err := w.d.opts.Egress.CheckHost(req.URL.Host); err != nil {
		return permanent{fmt.Errorf("posting to %s: %w", p.Spec.Type, err)}
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which may be secret
		}
		var denied *egress.DeniedError
		if errors.As(err, &denied) {
			return permanent{fmt.Errorf("posting to %s: %w", p.Spec.Type, denied)} // the same address next time
		}
		return fmt.Errorf("posting to %s: %s", p.Spec.Type, redact(err.Error(), values))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%s answered %s", p.Spec.Type, resp.Status)
	case resp.StatusCode >= 400:
		return permanent{fmt.Errorf("%s answered %s", p.Spec.Type, resp.Status)}
	}
	// Slack's Web API answers 200 with {"ok": false, "error": "..."}.
	if p.Spec.Type == gitsyncv1.ProviderSlack && target.Token != "" && strings.Contains(string(answer), `"ok":false`) {
		return permanent{fmt.Errorf("slack refused the message: %s", redact(string(answer), values))}
	}
	return nil
}

// readSecret reads the Provider's Secret name (none: "").
func (w *worker) readSecret(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	if name == "" {
		return nil, nil
	}
	s := &corev1.Secret{}
	if err := w.d.Secrets.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return s.Data, nil
}

// sourceSecrets names the Secrets of the event's sources of its namespace: a
// GitRepository's credentials and webhook token, a HelmRepository's or OCIRepository's
// credentials (every source of an Application of spec.sources).
func (w *worker) sourceSecrets(ctx context.Context, m Message) []string {
	var names []string
	for _, src := range m.Event.Sources {
		if src.Namespace != m.Event.Namespace {
			continue
		}
		for _, name := range w.secretsOf(ctx, src) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// secretsOf names the Secrets of one source.
func (w *worker) secretsOf(ctx context.Context, src EventSource) []string {
	key := types.NamespacedName{Namespace: src.Namespace, Name: src.Name}
	var refs []*gitsyncv1.LocalObjectReference
	switch src.Kind {
	case gitsyncv1.HelmRepositoryKind:
		repo := &gitsyncv1.HelmRepository{}
		if w.d.Reader.Get(ctx, key, repo) != nil {
			return nil
		}
		refs = append(refs, repo.Spec.SecretRef)
	case gitsyncv1.OCIRepositoryKind:
		repo := &gitsyncv1.OCIRepository{}
		if w.d.Reader.Get(ctx, key, repo) != nil {
			return nil
		}
		refs = append(refs, repo.Spec.SecretRef)
	default:
		repo := &gitsyncv1.GitRepository{}
		if w.d.Reader.Get(ctx, key, repo) != nil {
			return nil
		}
		refs = append(refs, repo.Spec.SecretRef, repo.Spec.WebhookSecretRef)
	}
	var names []string
	for _, ref := range refs {
		if ref != nil {
			names = append(names, ref.Name)
		}
	}
	return names
}

// secretValues are the values worth redacting (and the lines of multi-line ones, such as
// keys), longest first.
func secretValues(data map[string][]byte) []string {
	var out []string
	for k, v := range data {
		if k == "ca.crt" || k == "known_hosts" {
			continue // public
		}
		s := strings.TrimSpace(string(v))
		if len(s) >= 4 {
			out = append(out, s)
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 8 && line != s {
				out = append(out, line)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func redact(s string, values []string) string {
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "*****")
	}
	return s
}

// httpClient is the client of one delivery (forge.HTTPClient: the Provider's timeout,
// proxy and CA bundle, dialling through guard).
func httpClient(p *gitsyncv1.Provider, ca []byte, guard *egress.Guard) (*http.Client, error) {
	return forge.HTTPClient(p, ca, guard)
}
