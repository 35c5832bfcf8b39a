package render

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/helm"
)

// ReadValuesFrom reads one valuesFrom reference of an Application of namespace ns
// through c (the Application's identity, or a person's): nil when it is optional and
// missing, a *ValuesError when it is required and missing. Errors never quote values.
func ReadValuesFrom(ctx context.Context, c client.Reader, ns string, ref gitsyncv1.ValuesReference) (map[string]any, error) {
	key := ref.Key
	if key == "" {
		key = "values.yaml"
	}
	what := fmt.Sprintf("valuesFrom %s %s key %s", ref.Kind, ref.Name, key)
	var data []byte
	var found bool
	var err error
	switch ref.Kind {
	case "Secret":
		sec := &corev1.Secret{}
		if err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, sec); err == nil {
			data, found = sec.Data[key]
		}
	default:
		cm := &corev1.ConfigMap{}
		if err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cm); err == nil {
			var s string
			s, found = cm.Data[key]
			data = []byte(s)
		}
	}
	switch {
	case apierrors.IsNotFound(err) || (err == nil && !found):
		if ref.Optional {
			return nil, nil
		}
		return nil, &ValuesError{fmt.Errorf("%s: not found", what)}
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return helm.ParseValues(what, data)
}

// LookupClients makes the dynamic clients of Helm's lookup, one per identity.
type LookupClients struct {
	mu      sync.Mutex
	clients map[string]dynamic.Interface
}

// Provider serves Helm's lookup as user ("" for cfg's own identity), so a chart sees
// only what that identity may read.
func (l *LookupClients) Provider(cfg *rest.Config, mapper meta.RESTMapper, user string) *LookupProvider {
	return &LookupProvider{clients: l, cfg: cfg, mapper: mapper, user: user}
}

// LookupProvider is Helm's engine.ClientProvider for one identity.
type LookupProvider struct {
	clients *LookupClients
	cfg     *rest.Config
	mapper  meta.RESTMapper
	user    string
}

// GetClientFor returns the client of a kind, and whether it is namespaced.
func (p *LookupProvider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	mapping, err := p.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, false, err
	}
	dc, err := p.clients.get(p.cfg, p.user)
	if err != nil {
		return nil, false, err
	}
	return dc.Resource(mapping.Resource), mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (l *LookupClients) get(cfg *rest.Config, user string) (dynamic.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.clients[user]; ok {
		return c, nil
	}
	cfg = rest.CopyConfig(cfg)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the lookup client: %w", err)
	}
	if l.clients == nil {
		l.clients = map[string]dynamic.Interface{}
	}
	l.clients[user] = c
	return c, nil
}
