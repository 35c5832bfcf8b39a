// Package impersonate makes the apply.Manager of an Application: who it applies as (the
// service account it impersonates, or the operator) and how it judges health (its CEL
// spec.healthChecks, kstatus for the other kinds). The sync and the drift checks share it.
package impersonate

import (
	"fmt"
	"net/http"
	"sync"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/apply"
)

// ClusterAccess is what New needs of the manager.
type ClusterAccess interface {
	GetScheme() *runtime.Scheme
	GetRESTMapper() meta.RESTMapper
	GetHTTPClient() *http.Client
}

// Options tune NewWith.
type Options struct {
	// DefaultServiceAccount, when set, is impersonated (in the Application's own
	// namespace) by every Application without spec.serviceAccountName: gitsync run
	// --default-service-account. Empty: such Applications use the operator's identity.
	DefaultServiceAccount string
	// MaxClients bounds the impersonating clients kept, one per service account, least
	// recently used dropped first (DefaultMaxClients when 0): a tenant who makes many
	// service accounts cannot grow the operator's memory with them.
	MaxClients int
}

// DefaultMaxClients is Options.MaxClients when 0: more service accounts than most
// clusters' Applications use, each client a few KiB.
const DefaultMaxClients = 1024

// New is NewWith without a default service account.
func New(cfg *rest.Config, cluster ClusterAccess) (func(*gitsyncv1.Application) (*apply.Manager, error), error) {
	return NewWith(cfg, cluster, Options{})
}

// NewWith returns a function making the apply.Manager of an Application. Applies
// go through an uncached client (a cache would start a watch on every applied kind); with
// spec.serviceAccountName (or else opts.DefaultServiceAccount) the client impersonates
// that ServiceAccount, so the API server's RBAC decides what the Application may change.
// Impersonating clients are made once per service account and reused: drift checks and
// syncs ask for one every time.
func NewWith(cfg *rest.Config, cluster ClusterAccess, opts Options) (func(*gitsyncv1.Application) (*apply.Manager, error), error) {
	options := client.Options{Scheme: cluster.GetScheme(), Mapper: cluster.GetRESTMapper()}
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: options.Scheme, Mapper: options.Mapper, HTTPClient: cluster.GetHTTPClient()})
	if err != nil {
		return nil, fmt.Errorf("creating the apply client: %w", err)
	}
	clients := newClientCache(opts.MaxClients, func(user string) (client.Client, error) {
		impersonated := rest.CopyConfig(cfg)
		impersonated.Impersonate = rest.ImpersonationConfig{UserName: user}
		return client.NewWithWatch(impersonated, options)
	})
	return func(app *gitsyncv1.Application) (*apply.Manager, error) {
		owner := apply.Owner{Name: app.Name, Namespace: app.Namespace}
		user := Identity(app, opts.DefaultServiceAccount)
		if user == OperatorIdentity {
			return withHealthChecks(app, apply.New(direct, direct, owner)), nil
		}
		c, err := clients.get(user)
		if err != nil {
			return nil, fmt.Errorf("creating a client for %s: %w", user, err)
		}
		return withHealthChecks(app, apply.New(c, c, owner)), nil
	}, nil
}

// clientCache keeps the impersonating clients of the most recently used service
// accounts (k8s.io/utils/lru: a map and a list under one lock, so a hit costs what the
// plain map did plus moving one list element).
type clientCache struct {
	mu    sync.Mutex // one client made per user, not one per concurrent miss
	cache *lru.Cache
	make  func(user string) (client.Client, error)
}

func newClientCache(size int, make func(string) (client.Client, error)) *clientCache {
	if size <= 0 {
		size = DefaultMaxClients
	}
	return &clientCache{cache: lru.New(size), make: make}
}

func (c *clientCache) get(user string) (client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cache.Get(user); ok {
		return cl.(client.Client), nil
	}
	cl, err := c.make(user)
	if err != nil {
		return nil, err
	}
	c.cache.Add(user, cl)
	return cl, nil
}

// OperatorIdentity is status.serviceAccount when no service account is impersonated.
const OperatorIdentity = "operator"

// Identity names who applies for the Application: the user name of the service account
// it impersonates (spec.serviceAccountName, or else defaultSA), or OperatorIdentity.
func Identity(app *gitsyncv1.Application, defaultSA string) string {
	sa := app.Spec.ServiceAccountName
	if sa == "" {
		sa = defaultSA
	}
	if sa == "" {
		return OperatorIdentity
	}
	return fmt.Sprintf("system:serviceaccount:%s:%s", app.Namespace, sa)
}
