package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Review results are kept this long: a revoked token or a removed RoleBinding stops
// working within reviewTTL, and a page view costs no API call for what it asked just
// before. The caches are bounded (reviewedTokens, reviewedAccess entries).
const (
	reviewTTL      = 10 * time.Second
	reviewedTokens = 1024
	reviewedAccess = 8192
)

// expiring is a map whose entries live ttl and of which there are at most max: when it is
// full, the expired entries go, and if that is not enough, arbitrary ones.
type expiring[K comparable, V any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	now     func() time.Time
	entries map[K]expiringEntry[V]
}

type expiringEntry[V any] struct {
	value V
	until time.Time
}

func newExpiring[K comparable, V any](ttl time.Duration, max int) *expiring[K, V] {
	return &expiring[K, V]{ttl: ttl, max: max, now: time.Now, entries: map[K]expiringEntry[V]{}}
}

func (e *expiring[K, V]) get(k K) (V, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	entry, ok := e.entries[k]
	if !ok || !e.now().Before(entry.until) {
		var zero V
		return zero, false
	}
	return entry.value, true
}

func (e *expiring[K, V]) put(k K, v V) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if _, ok := e.entries[k]; !ok && len(e.entries) >= e.max {
		for key, entry := range e.entries {
			if !now.Before(entry.until) {
				delete(e.entries, key)
			}
		}
		for key := range e.entries {
			if len(e.entries) < e.max {
				break
			}
			delete(e.entries, key)
		}
	}
	e.entries[k] = expiringEntry[V]{value: v, until: now.Add(e.ttl)}
}

func (e *expiring[K, V]) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.entries)
}

// caller is whom a request answers to.
type caller struct {
	// name counts the caller's event streams.
	name string
	// user is whom the SubjectAccessReviews ask about (AuthKubernetes); nil: the Server's
	// own identity (`gitsync ui`), to which the API server applies its rights itself.
	user *authenticationv1.UserInfo
	// key identifies user (name, uid, groups, extra) in the access cache.
	key string
}

type callerKey struct{}

func withCaller(ctx context.Context, c *caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf is the request's caller; without one (never from ServeHTTP) an anonymous user,
// whom the reviews refuse.
func callerOf(ctx context.Context) *caller {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		return c
	}
	anonymous := &authenticationv1.UserInfo{Username: "system:anonymous"}
	return &caller{name: anonymous.Username, user: anonymous, key: userKey(anonymous)}
}

func userKey(u *authenticationv1.UserInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q", u.Username, u.UID, u.Groups)
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %q=%q", k, []string(u.Extra[k]))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// reviews asks the API server, with the Server's identity, who a token is (TokenReview)
// and what a user may do (SubjectAccessReview), and remembers the answers for reviewTTL.
type reviews struct {
	c      client.Client
	tokens *expiring[[32]byte, *authenticationv1.UserInfo]
	access *expiring[string, bool]
}

func newReviews(c client.Client) *reviews {
	return &reviews{c: c, tokens: newExpiring[[32]byte, *authenticationv1.UserInfo](reviewTTL, reviewedTokens),
		access: newExpiring[string, bool](reviewTTL, reviewedAccess)}
}

// user returns the user the token authenticates, nil when the API server does not accept
// it (remembered as well: a wrong token does not cost a review per request).
func (r *reviews) user(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if u, ok := r.tokens.get(key); ok {
		return u, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := r.c.Create(ctx, review); err != nil {
		return nil, fmt.Errorf("reviewing a token: %w", err)
	}
	var u *authenticationv1.UserInfo
	if review.Status.Authenticated && review.Status.Error == "" {
		u = review.Status.User.DeepCopy()
	}
	r.tokens.put(key, u)
	return u, nil
}

// may says whether c may do verb on resource (of group) in namespace ("" : in every
// namespace, or a cluster-scoped resource), by name when name is set. An error of the
// review refuses.
func (r *reviews) may(ctx context.Context, c *caller, verb string, gr schema.GroupResource, namespace, name string) bool {
	if c.user == nil {
		return true
	}
	key := strings.Join([]string{c.key, verb, gr.Group, gr.Resource, namespace, name}, "\x00")
	if ok, found := r.access.get(key); found {
		return ok
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range c.user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: c.user.Username, UID: c.user.UID, Groups: c.user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gr.Group, Resource: gr.Resource,
			Namespace: namespace, Name: name},
	}}
	if err := r.c.Create(ctx, review); err != nil {
		return false
	}
	r.access.put(key, review.Status.Allowed)
	return review.Status.Allowed
}
