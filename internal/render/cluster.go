package render

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// ScopeFrom tells the scope of a kind from m, the cluster's discovery (Cluster's
// IsNamespaced).
func ScopeFrom(m meta.RESTMapper) func(schema.GroupKind) (bool, error) {
	return func(gk schema.GroupKind) (bool, error) {
		mapping, err := m.RESTMapping(gk)
		if err != nil {
			return false, err
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
}

// ClusterOf is the one view of the cluster a render of an Application in namespace
// takes, for a sync and for a person's preview alike: kinds' scopes from mapper;
// valuesFrom, substituteFrom and, when keys, the decryption Secret, read from namespace
// only with the client that reader returns (the Application's identity, or the person's;
// asked for once, on first use). The caller adds what differs: Discovery, Lookup and
// Dependencies.
func ClusterOf(namespace string, mapper meta.RESTMapper, reader func() (client.Client, error), keys bool) *Cluster {
	reader = sync.OnceValues(reader)
	c := &Cluster{IsNamespaced: ScopeFrom(mapper)}
	c.Values = func(ctx context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
		cl, err := reader()
		if err != nil {
			return nil, err
		}
		return ReadValuesFrom(ctx, cl, namespace, ref)
	}
	c.Variables = func(ctx context.Context, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
		cl, err := reader()
		if err != nil {
			return nil, err
		}
		return ReadSubstituteFrom(ctx, cl, namespace, ref)
	}
	if keys {
		c.Keys = func(ctx context.Context, name string) (decrypt.KeySource, error) {
			cl, err := reader()
			if err != nil {
				return nil, err
			}
			return ReadKeys(ctx, cl, namespace, name)
		}
	}
	return c
}
