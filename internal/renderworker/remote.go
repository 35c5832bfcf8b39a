package renderworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// Call methods: what a render asks the parent for.
const (
	callServerVersion  = "serverVersion"
	callResources      = "serverGroupsAndResources"
	callValues         = "values"
	callLookupScope    = "lookupScope"
	callLookup         = "lookup"
	callDependencies   = "dependencies"
	callIsNamespaced   = "isNamespaced"
	callKeys           = "keys"
	callDecryptDataKey = "decryptDataKey"
	callDescribeKeys   = "describeKeys"
	callVariables      = "variables"
)

// channel is the worker's side of the parent channel during one render: one call at a
// time, each answered before the next.
type channel struct {
	mu  sync.Mutex
	in  io.Reader
	out io.Writer
}

// call sends method with args and decodes the reply's value into out (when not nil).
func (c *channel) call(method string, args, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	if err := writeFrame(c.out, &message{Kind: kindCall, Call: &call{Method: method, Args: raw}}); err != nil {
		return fmt.Errorf("asking the operator for %s: %w", method, err)
	}
	m, err := readFrame(c.in, maxRequest)
	if err != nil {
		return fmt.Errorf("reading the operator's answer to %s: %w", method, err)
	}
	if m.Kind != kindReply || m.Reply == nil {
		return fmt.Errorf("the operator answered %s with a %s frame", method, m.Kind)
	}
	if m.Reply.Err != nil {
		return callError(m.Reply.Err)
	}
	if out == nil || len(m.Reply.Value) == 0 {
		return nil
	}
	return json.Unmarshal(m.Reply.Value, out)
}

// callError turns a reply's error back into the error its caller in the render expects.
func callError(e *wireError) error {
	switch e.Class {
	case classNotFound:
		return apierrors.NewNotFound(schema.GroupResource{}, e.Message)
	case classNoKey:
		return fmt.Errorf("%s: %w", e.Message, decrypt.ErrNoKey)
	}
	return e.toError()
}

// remoteCluster is a render.Cluster whose parts (those the parent has) call the parent.
func remoteCluster(ch *channel, has clusterParts) *render.Cluster {
	c := &render.Cluster{}
	if has.Discovery {
		c.Discovery = &remoteDiscovery{ch: ch}
	}
	if has.Values {
		c.Values = func(_ context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
			var v map[string]any
			return v, ch.call(callValues, ref, &v)
		}
	}
	if has.Lookup {
		c.Lookup = remoteLookup{ch: ch}
	}
	if has.Dependencies {
		c.Dependencies = func(_ context.Context, ch0 *chart.Chart) error { return remoteDependencies(ch, ch0) }
	}
	if has.IsNamespaced {
		scopes := map[schema.GroupKind]bool{}
		c.IsNamespaced = func(gk schema.GroupKind) (bool, error) {
			if v, ok := scopes[gk]; ok {
				return v, nil
			}
			var v bool
			if err := ch.call(callIsNamespaced, gk, &v); err != nil {
				return false, err
			}
			scopes[gk] = v
			return v, nil
		}
	}
	if has.Keys {
		c.Keys = func(_ context.Context, secret string) (decrypt.KeySource, error) {
			if err := ch.call(callKeys, secret, nil); err != nil {
				return nil, err
			}
			return remoteKeys{ch: ch}, nil
		}
	}
	if has.Variables {
		c.Variables = func(_ context.Context, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
			src := &substitute.Source{}
			return src, ch.call(callVariables, ref, src)
		}
	}
	return c
}

// remoteDiscovery serves what a chart's Capabilities read of discovery (the server's
// version and resources); nothing else of DiscoveryInterface is used by a render, and
// the embedded nil interface panics if something ever is.
type remoteDiscovery struct {
	discovery.DiscoveryInterface
	ch *channel
}

func (d *remoteDiscovery) ServerVersion() (*version.Info, error) {
	v := &version.Info{}
	return v, d.ch.call(callServerVersion, nil, v)
}

func (d *remoteDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	var lists []*metav1.APIResourceList
	return nil, lists, d.ch.call(callResources, nil, &lists)
}

// lookupArgs names what Helm's lookup reads.
type lookupArgs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
}

// remoteLookup serves Helm's lookup through the parent (the Application's identity).
type remoteLookup struct{ ch *channel }

func (l remoteLookup) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	args := lookupArgs{APIVersion: apiVersion, Kind: kind}
	var namespaced bool
	if err := l.ch.call(callLookupScope, args, &namespaced); err != nil {
		return nil, false, err
	}
	return &remoteResource{ch: l.ch, args: args}, namespaced, nil
}

var _ engine.ClientProvider = remoteLookup{}

// remoteResource is the client Helm's lookup gets: Namespace, Get and List call the
// parent; nothing else of the interface is used by lookup (the embedded nil interface
// panics if something ever is).
type remoteResource struct {
	dynamic.NamespaceableResourceInterface
	ch   *channel
	args lookupArgs
}

func (r *remoteResource) Namespace(ns string) dynamic.ResourceInterface {
	args := r.args
	args.Namespace = ns
	return &remoteResource{ch: r.ch, args: args}
}

func (r *remoteResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	args := r.args
	args.Name = name
	obj := map[string]any{}
	if err := r.ch.call(callLookup, args, &obj); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func (r *remoteResource) List(_ context.Context, _ metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	var raw json.RawMessage // decoded once, by the list itself
	if err := r.ch.call(callLookup, r.args, &raw); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	return list, list.UnmarshalJSON(raw)
}

// remoteKeys is the decryption Secret's keys, held by the parent: the worker sends the
// document's encrypted data key and gets the data key back; no private key enters it.
type remoteKeys struct{ ch *channel }

func (k remoteKeys) DecryptDataKey(key sopsfile.MasterKey) ([]byte, error) {
	var data []byte
	return data, k.ch.call(callDecryptDataKey, key, &data)
}

func (k remoteKeys) Describe() []string {
	var names []string
	if err := k.ch.call(callDescribeKeys, nil, &names); err != nil {
		return []string{"(" + err.Error() + ")"}
	}
	return names
}

// dependencyArgs is a chart whose dependencies the parent adds.
type dependencyArgs struct {
	Metadata *chart.Metadata `json:"metadata"`
	Lock     *chart.Lock     `json:"lock,omitempty"`
	// Have names the dependencies the chart already holds (its charts/ folder).
	Have []string `json:"have,omitempty"`
}

// chartFiles is a dependency the parent added: its files (without its charts/ folder)
// and its own dependencies, vendored or added.
type chartFiles struct {
	Files []fileData   `json:"files"`
	Deps  []chartFiles `json:"deps,omitempty"`
	Name  string       `json:"name"`
}

type fileData struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// remoteDependencies asks the parent for c's dependencies that its charts/ folder lacks
// and adds them to c, loaded here.
func remoteDependencies(ch *channel, c *chart.Chart) error {
	args := dependencyArgs{Metadata: c.Metadata, Lock: c.Lock}
	for _, d := range c.Dependencies() {
		args.Have = append(args.Have, d.Name())
	}
	var deps []chartFiles
	if err := ch.call(callDependencies, args, &deps); err != nil {
		return err
	}
	for _, d := range deps {
		sub, err := loadFiles(d)
		if err != nil {
			return err
		}
		c.AddDependency(sub)
	}
	return nil
}

// loadFiles loads a chart sent as chartFiles.
func loadFiles(d chartFiles) (*chart.Chart, error) {
	files := make([]*archive.BufferedFile, 0, len(d.Files))
	for _, f := range d.Files {
		files = append(files, &archive.BufferedFile{Name: f.Name, Data: f.Data})
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading dependency %s: %w", d.Name, err)
	}
	for _, sub := range d.Deps {
		s, err := loadFiles(sub)
		if err != nil {
			return nil, err
		}
		c.AddDependency(s)
	}
	return c, nil
}

// filesOf is c as chartFiles: its raw files outside charts/, and its dependencies.
func filesOf(c *chart.Chart) chartFiles {
	out := chartFiles{Name: c.Name()}
	for _, f := range c.Raw {
		if strings.HasPrefix(f.Name, "charts/") {
			continue
		}
		out.Files = append(out.Files, fileData{Name: f.Name, Data: f.Data})
	}
	for _, d := range c.Dependencies() {
		out.Deps = append(out.Deps, filesOf(d))
	}
	return out
}

var errUnknownCall = errors.New("unknown call")
