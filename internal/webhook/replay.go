package webhook

import (
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/utils/lru"
)

// A captured signed delivery verifies again when replayed: its signature covers the body
// only (GitHub, Gitea, Bitbucket, generic) or is a fixed token (GitLab), and the delivery
// id headers are not signed. So the receiver remembers, per repository, the digests of the
// bodies that recently woke it, and a delivery whose body woke a repository within
// replayWindow wakes it no more (202, woken 0, as a delivery that concerns nothing).
// Providers' own redeliveries resend the same body and are answered the same way; the
// first delivery already woke the repository. The generic provider is not guarded: its
// body, {"url", "ref"}, names no event, so every push of a branch sends the same one (the
// demo's curl line, a CI step after each commit), and a replay of it asks for no more than
// what it verified for: one ls-remote of that repository, fetching only a commit that
// moved.
//
// Only deliveries that verified for a repository are remembered, in a ring of
// replaysPerRepo digests of that repository: a sender who holds no secret cannot fill the
// memory, and one tenant's deliveries cannot push another's out. At most replayRepos
// repositories are remembered, least recently woken dropped first.
const (
	replayWindow   = 10 * time.Minute
	replaysPerRepo = 64
	replayRepos    = 4096
)

// bodyNamesEvent tells whether p's push bodies name the event (its commits), so that the
// same body twice is a replay; not the generic provider's.
func (p provider) bodyNamesEvent() bool { return p.name != "generic" }

// replays is the receiver's memory of recent deliveries.
type replays struct {
	now   func() time.Time
	mu    sync.Mutex
	repos *lru.Cache // [2]string{namespace, name} → *recentDeliveries
}

type recentDeliveries struct {
	digests [replaysPerRepo]delivered
	next    int
}

type delivered struct {
	digest [sha256.Size]byte
	at     time.Time
}

func newReplays() *replays {
	return &replays{now: time.Now, repos: lru.New(replayRepos)}
}

// replayed tells whether the body of digest woke the repository within replayWindow,
// and remembers it otherwise.
func (r *replays) replayed(namespace, name string, digest [sha256.Size]byte) bool {
	now := r.now()
	key := [2]string{namespace, name}
	r.mu.Lock()
	defer r.mu.Unlock()
	var recent *recentDeliveries
	if v, ok := r.repos.Get(key); ok {
		recent = v.(*recentDeliveries)
	} else {
		recent = &recentDeliveries{}
		r.repos.Add(key, recent)
	}
	for _, d := range recent.digests {
		if d.digest == digest && !d.at.IsZero() && now.Sub(d.at) < replayWindow {
			return true
		}
	}
	recent.digests[recent.next] = delivered{digest: digest, at: now}
	recent.next = (recent.next + 1) % replaysPerRepo
	return false
}
