package renderworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// partsOf says which parts of c the parent serves.
func partsOf(c *render.Cluster) clusterParts {
	if c == nil {
		return clusterParts{}
	}
	return clusterParts{
		Discovery: c.Discovery != nil, Values: c.Values != nil, Lookup: c.Lookup != nil,
		Dependencies: c.Dependencies != nil, IsNamespaced: c.IsNamespaced != nil,
		Keys: c.Keys != nil, Variables: c.Variables != nil,
	}
}

// server answers one render's calls from the parent's render.Cluster (the
// Application's identity).
type server struct {
	cluster *render.Cluster
	keys    decrypt.KeySource
}

// serve answers one call.
func (s *server) serve(ctx context.Context, c *call) *reply {
	value, err := s.dispatch(ctx, c)
	if err != nil {
		return &reply{Err: errorOf(err, callClass)}
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return &reply{Err: &wireError{Message: fmt.Sprintf("encoding the answer to %s: %v", c.Method, err)}}
	}
	return &reply{Value: raw}
}

// callClass keeps what the worker's side branches on: a missing lookup object, a key
// that is not there, and a render's own classes.
func callClass(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return classNotFound
	case errors.Is(err, decrypt.ErrNoKey):
		return classNoKey
	}
	return renderClass(err)
}

// errMissingPart is a call for a part of the cluster the parent did not offer.
var errMissingPart = errors.New("not served by the operator for this render")

func (s *server) dispatch(ctx context.Context, c *call) (any, error) {
	cl := s.cluster
	if cl == nil {
		return nil, fmt.Errorf("%s: %w", c.Method, errMissingPart)
	}
	args := func(v any) error {
		if err := json.Unmarshal(c.Args, v); err != nil {
			return fmt.Errorf("decoding the arguments of %s: %w", c.Method, err)
		}
		return nil
	}
	switch c.Method {
	case callServerVersion:
		if cl.Discovery == nil {
			break
		}
		return cl.Discovery.ServerVersion()
	case callResources:
		if cl.Discovery == nil {
			break
		}
		_, lists, err := cl.Discovery.ServerGroupsAndResources()
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, err
		}
		return lists, nil
	case callValues:
		var ref gitsyncv1.ValuesReference
		if cl.Values == nil || args(&ref) != nil {
			break
		}
		return cl.Values(ctx, ref)
	case callVariables:
		var ref gitsyncv1.SubstituteReference
		if cl.Variables == nil || args(&ref) != nil {
			break
		}
		return cl.Variables(ctx, ref)
	case callIsNamespaced:
		var gk schema.GroupKind
		if cl.IsNamespaced == nil || args(&gk) != nil {
			break
		}
		return cl.IsNamespaced(gk)
	case callKeys:
		var name string
		if cl.Keys == nil || args(&name) != nil {
			break
		}
		keys, err := cl.Keys(ctx, name)
		s.keys = keys
		return nil, err
	case callDecryptDataKey:
		var key sopsfile.MasterKey
		if s.keys == nil || args(&key) != nil {
			break
		}
		return s.keys.DecryptDataKey(key)
	case callDescribeKeys:
		if s.keys == nil {
			break
		}
		return s.keys.Describe(), nil
	case callLookupScope, callLookup:
		var a lookupArgs
		if cl.Lookup == nil || args(&a) != nil {
			break
		}
		return s.lookup(ctx, c.Method, a)
	case callDependencies:
		var a dependencyArgs
		if cl.Dependencies == nil || args(&a) != nil || a.Metadata == nil {
			break
		}
		return dependencies(ctx, cl, a)
	default:
		return nil, fmt.Errorf("%s: %w", c.Method, errUnknownCall)
	}
	return nil, fmt.Errorf("%s: %w", c.Method, errMissingPart)
}

// lookup serves Helm's lookup with the parent's (the Application's) client.
func (s *server) lookup(ctx context.Context, method string, a lookupArgs) (any, error) {
	client, namespaced, err := s.cluster.Lookup.GetClientFor(a.APIVersion, a.Kind)
	if err != nil {
		return nil, err
	}
	if method == callLookupScope {
		return namespaced, nil
	}
	var ri dynamic.ResourceInterface = client
	if namespaced && a.Namespace != "" {
		ri = client.Namespace(a.Namespace)
	}
	if a.Name != "" {
		obj, err := ri.Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return obj.Object, nil
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.UnstructuredContent(), nil
}

// dependencies adds the missing dependencies of the chart a describes (the parent's
// Dependencies: HelmRepositories of the Application's namespace, the egress guard) and
// returns what it added, for the worker to load.
func dependencies(ctx context.Context, cl *render.Cluster, a dependencyArgs) ([]chartFiles, error) {
	stub := &chart.Chart{Metadata: a.Metadata, Lock: a.Lock}
	have := map[string]bool{}
	for _, name := range a.Have { // stand-ins, so that only what is missing is looked for
		stub.AddDependency(&chart.Chart{Metadata: &chart.Metadata{Name: name}})
		have[name] = true
	}
	if err := cl.Dependencies(ctx, stub); err != nil {
		return nil, err
	}
	var deps []chartFiles
	for _, d := range stub.Dependencies() {
		if !have[d.Name()] {
			deps = append(deps, filesOf(d))
		}
	}
	return deps, nil
}
