package applicationset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/forge"
)

// +kubebuilder:rbac:groups=gitsync.dev,resources=providers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// SecretChecker tells whether the tenant of namespace may read the Secret name; an error
// refuses (the operator's tenant mode).
type SecretChecker = forge.SecretChecker

// PullRequestLister lists the open pull requests of a pullRequest generator through its
// Provider (same namespace as the set): the Provider's type and address, its Secret's
// token, address, headers and ca.crt, dialling through the egress guard. Its List is
// the Reconciler's PullRequests.
//
// A list is kept for the set's interval: the status changes of the generated
// Applications wake the set often, and each wake does not call the forge. The list is
// read again when the interval has passed, when the set's spec changes (generation) and
// when the set's gitsync.dev/requested-at annotation changes.
type PullRequestLister struct {
	// Client reads Providers (the manager's cache).
	Client client.Reader
	// Secrets reads the Provider's Secret (uncached).
	Secrets client.Reader
	// Egress guards the forge's address (nil: no guard).
	Egress *egress.Guard
	// SecretAccess, in tenant mode, is asked before the Provider's Secret is read with the
	// operator's identity; nil: no check.
	SecretAccess SecretChecker
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	lists map[string]listed
}

type listed struct {
	at   time.Time
	sets []appset.Params
}

// List returns one parameter set per open pull request of gen's repository that carries
// all of gen's labels (forks left out), at most gitsyncv1.MaxGeneratedApplications.
func (l *PullRequestLister) List(ctx context.Context, set *gitsyncv1.ApplicationSet, gen *gitsyncv1.PullRequestGenerator) ([]appset.Params, error) {
	spec, err := json.Marshal(gen)
	if err != nil {
		return nil, fmt.Errorf("pullRequest: %w", err)
	}
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", set.Namespace, set.Name, set.Generation,
		set.Annotations[gitsyncv1.RequestedAtAnnotation], spec)
	now := l.now()
	l.mu.Lock()
	got, ok := l.lists[key]
	l.mu.Unlock()
	if ok && now.Sub(got.at) < set.GetInterval().Duration {
		return append([]appset.Params(nil), got.sets...), nil
	}
	sets, err := l.list(ctx, set.Namespace, gen)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.lists == nil || len(l.lists) >= maxMemo {
		l.lists = map[string]listed{}
	}
	l.lists[key] = listed{at: now, sets: sets}
	l.mu.Unlock()
	return append([]appset.Params(nil), sets...), nil
}

func (l *PullRequestLister) list(ctx context.Context, ns string, gen *gitsyncv1.PullRequestGenerator) ([]appset.Params, error) {
	repo, err := parseRepository(gen.Repository)
	if err != nil {
		return nil, fmt.Errorf("pullRequest: %w", err)
	}
	c, err := l.client(ctx, ns, gen.ProviderRef.Name)
	if err != nil {
		return nil, fmt.Errorf("pullRequest: %w", err)
	}
	prs, err := c.ListPullRequests(ctx, repo, gen.Labels)
	if err != nil {
		return nil, fmt.Errorf("pullRequest: %s: %w", gen.Repository, err)
	}
	return appset.PullRequestParams(prs, gitsyncv1.MaxGeneratedApplications)
}

// parseRepository reads owner/name (GitLab: group/subgroup/project) without empty, "."
// or ".." segments: it becomes a path of the forge's API.
func parseRepository(s string) (forge.Repo, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 {
		return forge.Repo{}, fmt.Errorf("repository %q is not owner/name", s)
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return forge.Repo{}, fmt.Errorf("repository %q is not owner/name", s)
		}
	}
	return forge.Repo{Path: s}, nil
}

// client is the forge client of the Provider name in ns.
func (l *PullRequestLister) client(ctx context.Context, ns, name string) (*forge.Client, error) {
	ps := forge.Providers{Client: l.Client, Secrets: l.Secrets, Egress: l.Egress, SecretAccess: l.SecretAccess}
	return ps.For(ctx, ns, name, "gitsync-applicationset")
}

func (l *PullRequestLister) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
