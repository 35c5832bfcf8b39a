package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/build"
	"github.com/gitsync-dev/gitsync/internal/helm"
)

// chartRef names the chart an Application's path rendered (empty when not a chart), and
// the CRDs of its crds/ folders, which spec.helm.crds governs.
type chartRef struct {
	name, version string
	// crds holds the inventory IDs of the chart's crds/ CRDs, whatever the policy: Git
	// describes them, so a sync never prunes them, also when the policy leaves them out
	// of what it applies (Skip: never touched; Create: never updated).
	crds map[string]bool
	// createOnly: the crds are created when missing and never updated (Create, the
	// default, as helm install does); they are not watched for drift either.
	createOnly bool
}

// isCreateOnly tells whether obj is one of the chart's CRDs under the Create policy.
func (c chartRef) isCreateOnly(obj *unstructured.Unstructured) bool {
	return c.createOnly && c.crds[apply.EntryOf(obj).ID]
}

// watched returns objs without the create-only CRDs: what drift compares with Git.
func (c chartRef) watched(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if !c.createOnly || len(c.crds) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if !c.isCreateOnly(o) {
			out = append(out, o)
		}
	}
	return out
}

// valuesError is a valuesFrom reference that cannot be read: the revision stalls with
// reason ValuesNotFound.
type valuesError struct{ error }

// chartDeps are what a chart render takes from the cluster; each may be nil for an
// offline render (Helm's default capabilities, lookup finds nothing, and valuesFrom is
// an error).
type chartDeps struct {
	// values reads a valuesFrom reference (nil when optional and missing).
	values    func(context.Context, gitsyncv1.ValuesReference) (map[string]any, error)
	discovery discovery.DiscoveryInterface
	lookup    engine.ClientProvider
	// dependencies adds the dependencies a chart does not vendor (from HelmRepositories).
	dependencies func(context.Context, *chart.Chart) error
}

// chartSource is where a chart comes from: a directory of a checkout, or an archive
// from a chart repository.
type chartSource struct {
	load func() (*chart.Chart, error)
	// valuesFile reads one of spec.helm.valuesFiles.
	valuesFile func(c *chart.Chart, name string) (map[string]any, error)
}

// dirChart is the chart in chartDir, confined to the checkout at root.
func dirChart(root, chartDir string) chartSource {
	return chartSource{
		load: func() (*chart.Chart, error) { return helm.LoadDir(root, chartDir) },
		valuesFile: func(_ *chart.Chart, name string) (map[string]any, error) {
			return helm.ReadValuesFile(root, chartDir, name)
		},
	}
}

// archiveChart is a chart archive downloaded from a HelmRepository.
func archiveChart(file string) chartSource {
	return chartSource{
		load:       func() (*chart.Chart, error) { return helm.LoadArchive(file) },
		valuesFile: helm.ChartValuesFile,
	}
}

// renderChart renders a chart as a sync does: valuesFrom read with the Application's
// identity, capabilities from the cluster, lookup through the Application's identity,
// .Release.IsUpgrade once the Application has an inventory.
func (r *ApplicationReconciler) renderChart(ctx context.Context, app *gitsyncv1.Application, src chartSource) ([]*unstructured.Unstructured, chartRef, error) {
	deps := chartDeps{discovery: r.Discovery}
	deps.dependencies = func(ctx context.Context, c *chart.Chart) error {
		return r.chartDependencies(ctx, app, c, 0)
	}
	deps.values = func(ctx context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
		manager, err := r.Applier(app)
		if err != nil {
			return nil, err
		}
		return readValuesFrom(ctx, manager.Client(), app.Namespace, ref)
	}
	if r.Config != nil {
		user := identity(app, r.DefaultServiceAccount)
		if user == operatorIdentity {
			user = ""
		}
		deps.lookup = r.lookups.provider(r.Config, r.Mapper, user)
	}
	return renderChartWith(ctx, app, src, deps)
}

// renderChartWith renders the chart with spec.helm: valuesFiles from the source, then
// valuesFrom, then inline values, over the chart's values.yaml. The chart's crds/ come
// first unless spec.helm.crds is Skip; the returned chartRef names them all.
func renderChartWith(ctx context.Context, app *gitsyncv1.Application, src chartSource, deps chartDeps) ([]*unstructured.Unstructured, chartRef, error) {
	var none chartRef
	spec := app.Spec.Helm
	if spec == nil {
		spec = &gitsyncv1.HelmSpec{}
	}
	c, err := src.load()
	if err != nil {
		return nil, none, err
	}
	if deps.dependencies != nil {
		if err := deps.dependencies(ctx, c); err != nil {
			return nil, none, err
		}
	}
	if err := helm.CheckDependencies(c); err != nil {
		return nil, none, err
	}
	var values []map[string]any
	for _, f := range spec.ValuesFiles {
		v, err := src.valuesFile(c, f)
		if err != nil {
			return nil, none, err
		}
		values = append(values, v)
	}
	for _, ref := range spec.ValuesFrom {
		if deps.values == nil {
			return nil, none, fmt.Errorf("spec.helm.valuesFrom %s %s is read from the cluster: render it with a cluster", ref.Kind, ref.Name)
		}
		v, err := deps.values(ctx, ref)
		if err != nil {
			return nil, none, err
		}
		if v != nil {
			values = append(values, v)
		}
	}
	if spec.Values != nil && len(spec.Values.Raw) > 0 {
		inline := map[string]any{}
		if err := json.Unmarshal(spec.Values.Raw, &inline); err != nil {
			return nil, none, fmt.Errorf("spec.helm.values: not a map of values")
		}
		values = append(values, inline)
	}
	opts := helm.Options{
		ReleaseName: spec.ReleaseName,
		Namespace:   DefaultNamespace(app),
		IsUpgrade:   app.Status.Inventory != nil && len(app.Status.Inventory.Entries) > 0,
		Values:      values,
		SkipCRDs:    spec.CRDs == gitsyncv1.HelmCRDsSkip,
		Lookup:      deps.lookup,
	}
	if opts.ReleaseName == "" {
		opts.ReleaseName = app.Name
	}
	if deps.discovery != nil {
		if opts.Capabilities, err = helm.ClusterCapabilities(deps.discovery); err != nil {
			return nil, none, err
		}
	}
	rendered, err := helm.Render(ctx, c, opts)
	if err != nil {
		return nil, none, err
	}
	chart := chartRef{name: rendered.Chart, version: rendered.Version}
	files := make([]build.File, 0, len(rendered.Templates))
	for _, m := range rendered.Templates {
		files = append(files, build.File{Name: m.Name, Data: m.Data})
	}
	objs, err := build.Decode(files)
	if err != nil {
		return nil, none, err
	}
	crds, err := chartCRDs(c)
	if err != nil {
		return nil, none, err
	}
	chart.crds = make(map[string]bool, len(crds))
	for _, crd := range crds {
		chart.crds[apply.EntryOf(crd).ID] = true
	}
	switch spec.CRDs {
	case gitsyncv1.HelmCRDsSkip:
		return objs, chart, nil
	case gitsyncv1.HelmCRDsCreateReplace:
	default:
		chart.createOnly = true
	}
	return append(crds, objs...), chart, nil
}

// chartCRDs decodes the files of the chart's crds/ folders (its own and its subcharts').
func chartCRDs(c *chart.Chart) ([]*unstructured.Unstructured, error) {
	var files []build.File
	for _, crd := range c.CRDObjects() {
		files = append(files, build.File{Name: crd.Filename, Data: crd.File.Data})
	}
	return build.Decode(files)
}

// readValuesFrom reads one valuesFrom reference (nil when it is optional and missing).
// Errors never quote the values.
func readValuesFrom(ctx context.Context, c client.Client, ns string, ref gitsyncv1.ValuesReference) (map[string]any, error) {
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
		return nil, valuesError{fmt.Errorf("%s: not found", what)}
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return helm.ParseValues(what, data)
}

// lookupClients makes the dynamic clients of Helm's lookup, one per identity.
type lookupClients struct {
	mu      sync.Mutex
	clients map[string]dynamic.Interface
}

func (l *lookupClients) provider(cfg *rest.Config, mapper meta.RESTMapper, user string) *lookupProvider {
	return &lookupProvider{clients: l, cfg: cfg, mapper: mapper, user: user}
}

// lookupProvider serves Helm's lookup with the Application's identity, so a chart sees
// only what the Application's service account may read.
type lookupProvider struct {
	clients *lookupClients
	cfg     *rest.Config
	mapper  meta.RESTMapper
	user    string
}

func (p *lookupProvider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
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

func (l *lookupClients) get(cfg *rest.Config, user string) (dynamic.Interface, error) {
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
