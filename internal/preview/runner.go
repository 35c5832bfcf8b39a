package preview

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/forge"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Request is a pull request event for one GitRepository (the webhook receiver verified
// its signature for that repository).
type Request struct {
	// Namespace and Name identify the GitRepository.
	Namespace, Name string
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int
	// HeadBranch and HeadSHA are the head; BaseBranch the branch it targets.
	HeadBranch, HeadSHA, BaseBranch string
	// Fork: the head is in another repository.
	Fork bool
	// Closed: the pull request was closed or merged; stop previewing it.
	Closed bool
}

// SecretChecker tells whether the tenant of namespace may read the Secret name; an error
// refuses (the operator's tenant mode).
type SecretChecker = forge.SecretChecker

// Runner runs previews: one at a time per repository (in this replica), a newer request
// cancelling the older one. Start it with the manager (it is a manager.Runnable); Preview never blocks.
type Runner struct {
	// Client reads GitRepositories, Applications and Providers (the manager's cache).
	Client client.Client
	// Secrets reads the Provider's and the repository's Secrets (uncached).
	Secrets client.Reader
	// ApplyFor is the Application's applier: its client dry-runs and reads as the
	// Application's identity (impersonate.NewWith).
	ApplyFor func(*gitsyncv1.Application) (*apply.Manager, error)
	// Render renders as the sync does (the operator's render workers); nil: render.Render.
	Render func(context.Context, *gitsyncv1.Application, render.Source, *render.Cluster) (*render.Result, error)
	// Fetch are the fetcher options of the sync (egress guard, file URLs refused).
	Fetch source.FetcherOptions
	// TempDir holds each preview's checkout while it runs ("": the system's).
	TempDir string
	// Egress guards the forge's address.
	Egress *egress.Guard
	// SecretAccess, in tenant mode, is asked before a Secret is read with the
	// operator's identity; nil: no check.
	SecretAccess SecretChecker
	Log          logr.Logger

	mu  sync.Mutex
	ctx context.Context
	// latest is each repository's newest run: the next one waits for it (one at a
	// time per repository); byPull is each pull request's newest run, cancelled by the
	// next push to it or its closing.
	latest map[types.NamespacedName]*run
	byPull map[pullKey]*run
	wg     sync.WaitGroup
}

type pullKey struct {
	repo   types.NamespacedName
	number int
}

// run is one preview in progress.
type run struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start keeps the runner's context until ctx ends, then cancels and waits for the
// previews in progress.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
	r.wg.Wait()
	return nil
}

// NeedLeaderElection: the runner runs on every replica, as the webhook receiver does; the
// replica that receives a delivery previews it (each delivery reaches one replica).
func (r *Runner) NeedLeaderElection() bool { return false }

// Preview starts (or, for a closed pull request, stops) the preview of req in the
// background. A preview in progress of the same pull request is cancelled; the new one
// starts when the repository's previous preview has ended: one at a time per repository.
func (r *Runner) Preview(req Request) {
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	pk := pullKey{repo: key, number: req.Number}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest == nil {
		r.latest, r.byPull = map[types.NamespacedName]*run{}, map[pullKey]*run{}
	}
	if old := r.byPull[pk]; old != nil {
		old.cancel()
		delete(r.byPull, pk)
		if req.Closed {
			r.Log.Info("preview stopped: pull request closed", "repository", key, "number", req.Number)
		}
	}
	if req.Closed {
		return
	}
	if r.ctx == nil || r.ctx.Err() != nil {
		r.Log.Info("preview not started: the runner is not running", "repository", key)
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	cur := &run{cancel: cancel, done: make(chan struct{})}
	prev := r.latest[key]
	r.latest[key], r.byPull[pk] = cur, cur
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(cur.done)
		defer cancel()
		if prev != nil {
			<-prev.done
		}
		if ctx.Err() == nil {
			r.runOne(ctx, req)
		}
		r.mu.Lock()
		if r.latest[key] == cur {
			delete(r.latest, key)
		}
		if r.byPull[pk] == cur {
			delete(r.byPull, pk)
		}
		r.mu.Unlock()
	}()
}

// Running tells whether Start has been called and its context has not ended.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx != nil && r.ctx.Err() == nil
}

// Wait blocks until no preview is in progress (tests and benchmarks).
func (r *Runner) Wait() { r.wg.Wait() }
