package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
)

// Target is the way to one Cluster's API server: its config (as the kubeconfig's user),
// the RESTMapper and discovery of that server, and the clients of the identities used
// there. A Target is made once per Cluster generation and kubeconfig Secret version
// (Clients) and shared by every Application on that cluster.
type Target struct {
	// Key names the Cluster.
	Key types.NamespacedName
	// Config reaches the API server as the kubeconfig's user (no impersonation).
	Config *rest.Config
	// Mapper and Discovery are the remote API server's.
	Mapper    meta.RESTMapper
	Discovery discovery.DiscoveryInterface
	// Metadata is a metadata-only client as the kubeconfig's user (the drift watches').
	Metadata metadata.Interface
	// ServiceAccount is the Cluster's spec.serviceAccountName ("" for none).
	ServiceAccount string

	httpClient    *http.Client
	scheme        *runtime.Scheme
	generation    int64
	secretVersion string
	mu            sync.Mutex
	clients       map[string]client.Client
}

// User is the user name the Target impersonates for an Application whose own
// spec.serviceAccountName is appSA (in the Application's namespace appNS): the
// Application's service account when it names one, else the Cluster's
// spec.serviceAccountName (in the Cluster's namespace), else "" (the kubeconfig's own
// user). Every identity is bounded by what the kubeconfig's user may do there: it must
// be allowed to impersonate the service account on that cluster.
func (t *Target) User(appNS, appSA string) string {
	switch {
	case appSA != "":
		return serviceAccountUser(appNS, appSA)
	case t.ServiceAccount != "":
		return serviceAccountUser(t.Key.Namespace, t.ServiceAccount)
	}
	return ""
}

func serviceAccountUser(ns, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)
}

// Client returns an uncached client of the remote API server as user ("" for the
// kubeconfig's user; see User), made once per user.
func (t *Target) Client(user string) (client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(t.Config)
	opts := client.Options{Scheme: t.scheme, Mapper: t.Mapper}
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	} else {
		opts.HTTPClient = t.httpClient
	}
	c, err := client.NewWithWatch(cfg, opts) // a watch awaits a new CRD (apply.Manager)
	if err != nil {
		return nil, fmt.Errorf("creating a client of cluster %s: %w", t.Key, err)
	}
	if len(t.clients) >= maxUsersPerTarget {
		clear(t.clients)
	}
	t.clients[user] = c
	return c, nil
}

// ImpersonatedConfig is Config impersonating user ("" for none).
func (t *Target) ImpersonatedConfig(user string) *rest.Config {
	cfg := rest.CopyConfig(t.Config)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	return cfg
}

// maxUsersPerTarget bounds the clients one Target keeps (service accounts named by
// Applications on that cluster).
const maxUsersPerTarget = 256

// Clients is the cache of Targets, one per Cluster. A Target is kept while the Cluster's
// generation and its kubeconfig Secret's resourceVersion are those it was made from;
// Drop forgets one (the Cluster controller calls it when either changes or the Cluster
// goes away).
type Clients struct {
	// Reader reads Clusters' kubeconfig Secrets (uncached: no Secret is cached).
	Reader client.Reader
	// Scheme is the scheme of the remote clients (the operator's).
	Scheme *runtime.Scheme
	// Egress guards every dial to a remote API server (nil: none).
	Egress *egress.Guard
	// SecretAccess, in tenant mode, is asked before a Cluster's kubeconfig Secret is
	// read, as for a source's Secret (nil: no check).
	SecretAccess SecretChecker

	mu      sync.Mutex
	targets map[types.NamespacedName]*Target
}

// Get returns the Target of cl: the cached one if cl's generation is unchanged, else a
// new one from the kubeconfig Secret (read once).
func (c *Clients) Get(ctx context.Context, cl *gitsyncv1.Cluster) (*Target, error) {
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	c.mu.Lock()
	t, ok := c.targets[key]
	c.mu.Unlock()
	if ok && t.generation == cl.Generation {
		return t, nil
	}
	return c.Refresh(ctx, cl)
}

// Refresh reads cl's kubeconfig Secret and returns the cached Target when it was made
// from the same generation and Secret version, else a new one (which replaces it). In
// tenant mode (SecretAccess) the Secret is read only when the check allows it, at each
// Refresh: a refusal (*AccessError) drops the cached Target.
func (c *Clients) Refresh(ctx context.Context, cl *gitsyncv1.Cluster) (*Target, error) {
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	secret := &corev1.Secret{}
	ref := cl.Spec.KubeConfig.SecretRef
	if c.SecretAccess != nil {
		if err := c.SecretAccess.CheckSecret(ctx, cl.Namespace, ref.Name); err != nil {
			c.Drop(key)
			return nil, &AccessError{fmt.Errorf("the kubeconfig Secret %s/%s: %w", cl.Namespace, ref.Name, err)}
		}
	}
	if err := c.Reader.Get(ctx, types.NamespacedName{Namespace: cl.Namespace, Name: ref.Name}, secret); err != nil {
		c.Drop(key)
		return nil, &KubeConfigError{fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", cl.Namespace, ref.Name, err)}
	}
	c.mu.Lock()
	t, ok := c.targets[key]
	c.mu.Unlock()
	if ok && t.generation == cl.Generation && t.secretVersion == secret.ResourceVersion {
		return t, nil
	}
	data, ok := secret.Data[cl.KubeConfigKey()]
	if !ok {
		c.Drop(key)
		return nil, &KubeConfigError{fmt.Errorf("the Secret %s/%s has no key %q", cl.Namespace, ref.Name, cl.KubeConfigKey())}
	}
	t, err := c.newTarget(key, cl, data)
	if err != nil {
		c.Drop(key)
		return nil, &KubeConfigError{fmt.Errorf("cluster %s: %w", key, err)}
	}
	t.secretVersion = secret.ResourceVersion
	c.mu.Lock()
	if c.targets == nil {
		c.targets = map[types.NamespacedName]*Target{}
	}
	c.targets[key] = t
	c.mu.Unlock()
	return t, nil
}

// Drop forgets the Target of a Cluster.
func (c *Clients) Drop(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.targets[key]; ok {
		t.httpClient.CloseIdleConnections()
		delete(c.targets, key)
	}
}

// Len is the number of Targets kept.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.targets)
}

func (c *Clients) newTarget(key types.NamespacedName, cl *gitsyncv1.Cluster, kubeconfig []byte) (*Target, error) {
	cfg, err := RESTConfig(kubeconfig, c.Egress)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = requestTimeout
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the RESTMapper: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	mc, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	return &Target{Key: key, Config: cfg, Mapper: mapper, Discovery: dc, Metadata: mc,
		ServiceAccount: cl.Spec.ServiceAccountName, httpClient: httpClient, scheme: c.Scheme,
		generation: cl.Generation, clients: map[string]client.Client{}}, nil
}

// KubeConfigError is a Cluster's kubeconfig that cannot be used (missing, malformed or
// refused): only a change of the Secret or the Cluster fixes it.
type KubeConfigError struct{ err error }

func (e *KubeConfigError) Error() string { return e.err.Error() }
func (e *KubeConfigError) Unwrap() error { return e.err }
