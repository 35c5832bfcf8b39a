// Package applier makes the apply.Manager of an Application: who it applies as (the
// service account it impersonates, or the operator) and how it judges health (its CEL
// spec.healthChecks, kstatus for the other kinds). The sync and the drift checks share it.
package applier

import (
	"fmt"
	"net/http"
	"sync"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
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
}

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
	direct, err := client.New(cfg, client.Options{Scheme: options.Scheme, Mapper: options.Mapper, HTTPClient: cluster.GetHTTPClient()})
	if err != nil {
		return nil, fmt.Errorf("creating the apply client: %w", err)
	}
	var mu sync.Mutex
	impersonating := map[string]client.Client{}
	return func(app *gitsyncv1.Application) (*apply.Manager, error) {
		owner := apply.Owner{Name: app.Name, Namespace: app.Namespace}
		user := Identity(app, opts.DefaultServiceAccount)
		if user == OperatorIdentity {
			return withHealthChecks(app, apply.New(direct, direct, owner)), nil
		}
		mu.Lock()
		defer mu.Unlock()
		c, ok := impersonating[user]
		if !ok {
			impersonated := rest.CopyConfig(cfg)
			impersonated.Impersonate = rest.ImpersonationConfig{UserName: user}
			if c, err = client.New(impersonated, options); err != nil {
				return nil, fmt.Errorf("creating a client for %s: %w", user, err)
			}
			impersonating[user] = c
		}
		return withHealthChecks(app, apply.New(c, c, owner)), nil
	}, nil
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
