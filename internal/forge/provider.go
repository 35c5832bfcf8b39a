package forge

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
)

// SecretChecker tells whether the tenant of namespace may read the Secret name; an error
// refuses (the operator's tenant mode).
type SecretChecker interface {
	CheckSecret(ctx context.Context, namespace, name string) error
}

// Providers makes the forge client of a Provider that a tenant names (previews, the
// ApplicationSet pullRequest generator): a Provider of type github, gitlab or gitea in
// the tenant's namespace, its address, and its Secret's token, address, headers and
// ca.crt, dialling through the egress guard.
type Providers struct {
	// Client reads Providers (the manager's cache).
	Client client.Reader
	// Secrets reads the Provider's Secret (uncached).
	Secrets client.Reader
	// Egress guards the forge's address (nil: no guard).
	Egress *egress.Guard
	// SecretAccess, in tenant mode, is asked before the Provider's Secret is read with
	// the operator's identity; nil: no check.
	SecretAccess SecretChecker
}

// For returns the client of Provider name in namespace ns; userAgent names the caller.
func (ps Providers) For(ctx context.Context, ns, name, userAgent string) (*Client, error) {
	p := &gitsyncv1.Provider{}
	if err := ps.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		return nil, fmt.Errorf("reading Provider %s: %w", name, err)
	}
	if !IsForge(p.Spec.Type) {
		return nil, fmt.Errorf("provider %s is of type %q, not github, gitlab or gitea", name, p.Spec.Type)
	}
	target := Target{Type: p.Spec.Type, Address: p.Spec.Address, UserAgent: userAgent}
	var data map[string][]byte
	if p.Spec.SecretRef != nil {
		secret := p.Spec.SecretRef.Name
		if ps.SecretAccess != nil {
			if err := ps.SecretAccess.CheckSecret(ctx, ns, secret); err != nil {
				return nil, fmt.Errorf("reading Secret %s: %w", secret, err)
			}
		}
		s := &corev1.Secret{}
		if err := ps.Secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: secret}, s); err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", secret, err)
		}
		data = s.Data
	}
	if a := strings.TrimSpace(string(data["address"])); a != "" {
		target.Address = a
	}
	target.Token = strings.TrimSpace(string(data["token"]))
	if h := data["headers"]; len(h) > 0 {
		if err := yaml.Unmarshal(h, &target.Headers); err != nil {
			return nil, fmt.Errorf("the Secret's headers are not a YAML map of strings")
		}
	}
	// Through a tenant's proxy only the proxy is dialled: check the forge's host too.
	if err := ps.Egress.CheckHost(target.Host()); err != nil {
		return nil, fmt.Errorf("calling %s: %w", p.Spec.Type, err)
	}
	hc, err := HTTPClient(p, data["ca.crt"], ps.Egress)
	if err != nil {
		return nil, err
	}
	return New(target, hc)
}
