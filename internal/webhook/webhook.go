// Package webhook receives push webhooks from Git providers and wakes the
// GitRepositories they concern, so that a push is fetched and applied at once
// instead of at the next poll.
//
// Endpoints: POST /hook/github, /hook/gitlab, /hook/gitea, /hook/bitbucket
// (Bitbucket Server / Data Center) and /hook/generic. A delivery is handled
// in this order, and each step's answer is final:
//
//  1. unknown path: 404; any method but POST: 405. More than
//     Options.MaxConcurrent deliveries in progress at once: 503 with
//     Retry-After, before the body is read.
//  2. body over Options.MaxBodyBytes: 413.
//  3. no event header: 400; a ping or test event: 200; any other non-push
//     event: 200. Nothing is woken and no signature is needed: these answers
//     say nothing about the cluster. A pull (merge) request event of GitHub,
//     GitLab or Gitea, when Options.Previewer is set, goes through steps 4 to 7
//     too, and is handed to the Previewer for each repository it verified for
//     instead of waking it (pull.go).
//  4. no signature header: 401, before the body is even parsed.
//  5. malformed body, or no repository URL or ref in it: 400.
//  6. candidates = every GitRepository, in any namespace, whose spec.url
//     normalises (see NormalizeURL) to one of the payload's URLs, whatever
//     its ref. Only the candidates' webhook Secrets are read (Cluster.
//     WebhookSecret, once per Secret): a delivery naming an unknown URL
//     reads none. The delivery is authenticated when it verifies with
//     Options.SharedSecret, or with the webhook secret of at least one
//     candidate. Not authenticated: 401.
//  7. authenticated: 202 with {"woken": N}, where the woken repositories are
//     the candidates that the push concerns and that the delivery verified
//     for — their own secret, or the shared secret, which
//     verifies for every candidate, including those without a secret of
//     their own (the shared secret belongs to the operator's admin, who can
//     wake any GitRepository anyway). A repository that the same body woke
//     within the last 10 minutes is not woken again: a replayed delivery has
//     no effect (see replay.go).
//
// A push concerns a repository as follows. refs/heads/B: repositories that
// follow branch B (with or without a pinned commit), and those with no ref
// when B is the default branch; GitHub, GitLab and Gitea name the default
// branch in the payload, Bitbucket Server and generic do not, and then any
// branch push wakes the repositories with no ref (the receiver cannot know
// the default branch, and a needless wake costs one ls-remote). refs/tags/T:
// repositories that follow tag T, and every semver repository. Other refs
// (refs/pull/…, refs/merge-requests/…) and repositories pinned to a bare
// commit: nothing.
//
// So a caller without a valid signature gets the same 401 whether the URL it
// names is known or not: a wrong signature for a known repository and any
// signature for an unknown one are alike. Only a caller who proves the shared
// secret learns that a URL is unknown (202, woken 0), and only one who proves a
// repository's secret learns that its repository exists (202). The number of
// HMACs computed is padded to at least one when there is no candidate, so the
// common known/unknown cases also take about the same time. A repository
// without a webhook secret is never woken by a per-repository signature; one
// tenant's secret never wakes another tenant's repository, even at the same URL.
//
// Every answer's body is {"woken": N}: no repository names, no secrets, no
// reasons (those go to the log, at V(1), without secrets).
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultMaxBodyBytes caps a delivery's body when Options.MaxBodyBytes is unset.
// Ordinary pushes stay far below it (GitLab lists at most 20 commits, Bitbucket
// Server 5); a GitHub push of many hundreds of commits can exceed it, gets 413,
// and is picked up by the repository's next poll instead.
const DefaultMaxBodyBytes = 1 << 20

// wakeTimeout bounds the Wake calls of one delivery. They run detached from
// the request, so a provider that hangs up early does not cancel them.
const wakeTimeout = 10 * time.Second

// Repository is what the receiver needs to know of a GitRepository.
type Repository struct {
	// Namespace and Name identify the GitRepository.
	Namespace, Name string
	// URL is spec.url.
	URL string
	// Branch, Tag, SemVer and Commit are spec.ref; all empty means the remote's
	// default branch.
	Branch, Tag, SemVer, Commit string
	// SecretName is spec.webhookSecretRef.name, in Namespace; empty means none.
	SecretName string
	// Secret is the `token` key of the Secret that SecretName names, filled
	// in by the receiver (Cluster.WebhookSecret) for candidates only.
	// nil (or empty) means no webhook secret: no delivery signed per repository
	// wakes it; only one signed with Options.SharedSecret does.
	Secret []byte
}

// Cluster is implemented by the controller package with the Kubernetes client.
type Cluster interface {
	// Repositories returns every GitRepository (all namespaces), without
	// secrets: Secret is left nil, SecretName says which Secret to ask for.
	Repositories(ctx context.Context) ([]Repository, error)
	// WebhookSecret returns the `token` key of the Secret namespace/name; nil
	// when it has none. The receiver asks only for the secrets of the
	// repositories whose URL a delivery names.
	WebhookSecret(ctx context.Context, namespace, name string) ([]byte, error)
	// Wake sets gitsync.dev/requested-at on the GitRepository.
	Wake(ctx context.Context, namespace, name string) error
}

// Options tunes the receiver.
type Options struct {
	// SharedSecret (from --webhook-secret-file), when set, also verifies
	// deliveries for every repository (admin secret). Trailing CR/LF are ignored.
	SharedSecret []byte
	// MaxBodyBytes caps a delivery's body; 0 means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// MaxConcurrent caps the deliveries handled at once; past it the answer
	// is 503 with Retry-After. 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// Previewer, when set, receives the pull (merge) request events of GitHub, GitLab
	// and Gitea, verified as pushes are (pull.go); nil: they are answered 200 as any
	// other event.
	Previewer Previewer
}

// DefaultMaxConcurrent is Options.MaxConcurrent's default: enough for the
// bursts a Git provider sends (one delivery per push), small enough that a
// flood costs the API server and the CPU a bounded amount.
const DefaultMaxConcurrent = 16

// retryAfterSeconds is the Retry-After of a 503 past the concurrency cap.
const retryAfterSeconds = "5"

// NewHandler returns the receiver. It serves POST /hook/{github,gitlab,gitea,bitbucket,generic}
// and answers 404 for any other path; mount it at "/" or at "/hook/" without
// stripping the prefix.
func NewHandler(c Cluster, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	var shared []byte
	if s := secretKey(opts.SharedSecret); s != nil {
		shared = append([]byte(nil), s...)
	}
	return &handler{cluster: c, shared: shared, maxBody: opts.MaxBodyBytes, previewer: opts.Previewer,
		slots: make(chan struct{}, opts.MaxConcurrent), replays: newReplays()}
}

type handler struct {
	cluster   Cluster
	previewer Previewer
	shared    []byte
	maxBody   int64
	// replays remembers which bodies recently woke which repository (replay.go).
	replays *replays
	// slots holds one token per delivery in progress (a semaphore).
	slots chan struct{}
}

// ServeHTTP routes, answers and counts one delivery.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, known := providerFor(r.URL.Path)
	label := "unknown"
	code, woken := http.StatusNotFound, 0
	switch {
	case !known:
	case r.Method != http.MethodPost:
		label = p.name
		w.Header().Set("Allow", http.MethodPost)
		code = http.StatusMethodNotAllowed
	default:
		label = p.name
		select {
		case h.slots <- struct{}{}:
			code, woken = h.handle(w, r, p)
			<-h.slots
		default:
			w.Header().Set("Retry-After", retryAfterSeconds)
			code = http.StatusServiceUnavailable
		}
	}
	requestsTotal.WithLabelValues(label, strconv.Itoa(code)).Inc()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Woken int `json:"woken"`
	}{woken})
}

// providerFor returns the provider that serves path.
func providerFor(path string) (provider, bool) {
	name, ok := strings.CutPrefix(path, "/hook/")
	if !ok {
		return provider{}, false
	}
	p, ok := providers[name]
	return p, ok
}

// handle runs steps 2 to 7 of the package comment for a POST and returns the
// status code and the number of repositories woken.
func (h *handler) handle(w http.ResponseWriter, r *http.Request, p provider) (int, int) {
	log := ctrllog.FromContext(r.Context()).WithName("webhook").WithValues("provider", p.name)
	reject := func(code int, reason string) (int, int) {
		log.V(1).Info("delivery rejected", "code", code, "reason", reason)
		return code, 0
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			return reject(http.StatusRequestEntityTooLarge, "body too large")
		}
		return reject(http.StatusBadRequest, "reading body failed")
	}

	kind := p.event(r.Header)
	if kind == eventPull && (h.previewer == nil || p.parsePull == nil) {
		kind = eventOther
	}
	switch kind {
	case eventPull:
		return h.handlePull(r, p, body, log)
	case eventMissing:
		return reject(http.StatusBadRequest, "no event header")
	case eventPing:
		log.V(1).Info("ping received")
		return http.StatusOK, 0
	case eventOther:
		log.V(1).Info("event ignored: not a push, nor a pull request with previews")
		return http.StatusOK, 0
	}

	sig, present := p.signature(r.Header, body)
	if !present {
		return reject(http.StatusUnauthorized, "no signature")
	}
	ev, err := p.parse(r.Header, body)
	if err != nil {
		return reject(http.StatusBadRequest, "malformed payload")
	}
	repos, err := h.cluster.Repositories(r.Context())
	if err != nil {
		log.Error(err, "listing GitRepositories")
		return http.StatusInternalServerError, 0
	}
	cands, err := h.withSecrets(r.Context(), candidates(repos, ev.urls))
	if err != nil {
		log.Error(err, "reading webhook secrets")
		return http.StatusInternalServerError, 0
	}
	wake, ok := decide(cands, ev, sig, h.shared)
	if !ok {
		return reject(http.StatusUnauthorized, "signature verifies for no repository the payload names")
	}

	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), wakeTimeout)
	defer cancel()
	woken, failed := 0, false
	digest := sha256.Sum256(body)
	for _, repo := range wake {
		if p.bodyNamesEvent() && h.replays.replayed(repo.Namespace, repo.Name, digest) {
			log.Info("replayed delivery ignored", "namespace", repo.Namespace, "name", repo.Name)
			continue
		}
		if err := h.cluster.Wake(ctx, repo.Namespace, repo.Name); err != nil {
			log.Error(err, "waking GitRepository", "namespace", repo.Namespace, "name", repo.Name)
			failed = true
			continue
		}
		log.Info("woke GitRepository", "namespace", repo.Namespace, "name", repo.Name)
		woken++
	}
	if failed {
		return http.StatusInternalServerError, woken
	}
	return http.StatusAccepted, woken
}

// withSecrets fills in the webhook secrets of cands, reading each Secret once.
// A Secret that is missing or unreadable leaves its repositories without a
// secret (the Cluster logs why); only a cancelled request is an error.
func (h *handler) withSecrets(ctx context.Context, cands []Repository) ([]Repository, error) {
	read := map[[2]string][]byte{}
	for i, c := range cands {
		if c.SecretName == "" {
			continue
		}
		key := [2]string{c.Namespace, c.SecretName}
		token, done := read[key]
		if !done {
			t, err := h.cluster.WebhookSecret(ctx, c.Namespace, c.SecretName)
			if err != nil && ctx.Err() != nil {
				return nil, err
			}
			token, read[key] = t, t
		}
		cands[i].Secret = token
	}
	return cands, nil
}

// decoyKey keys the HMAC computed when a payload names no known repository,
// so that such a delivery costs about as much as one naming a repository. Its
// result is thrown away; it is not a secret.
var decoyKey = []byte("gitsync webhook: no candidate")

// decide returns the repositories a delivery wakes, and whether it is
// authenticated at all (step 6 and 7 of the package comment).
func decide(repos []Repository, ev push, sig signature, shared []byte) ([]Repository, bool) {
	verified, authenticated := verify(candidates(repos, ev.urls), sig, shared)
	var wake []Repository
	for _, c := range verified {
		if wants(c, ev.refs, ev.defaultBranch) {
			wake = append(wake, c)
		}
	}
	return wake, authenticated
}
