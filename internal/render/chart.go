package render

import (
	"context"
	"encoding/json"
	"fmt"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/build"
	"github.com/gitsync-dev/gitsync/internal/helm"
)

// IsCreateOnly tells whether obj is one of the chart's CRDs under the Create policy.
func (c Chart) IsCreateOnly(obj *unstructured.Unstructured) bool {
	return c.CreateOnly && c.CRDs[apply.EntryOf(obj).ID]
}

// Watched returns objs without the create-only CRDs: what drift compares with Git.
func (c Chart) Watched(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if !c.CreateOnly || len(c.CRDs) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if !c.IsCreateOnly(o) {
			out = append(out, o)
		}
	}
	return out
}

// chartSource is where a chart comes from: a directory of a checkout, or an archive
// from a chart repository.
type chartSource struct {
	load func() (*chart.Chart, error)
	// valuesFile reads one of spec.helm.valuesFiles, unparsed.
	valuesFile func(c *chart.Chart, name string) ([]byte, error)
	// valuesRoots are the checkouts of spec.helm.valuesFilesFrom's sources (Source.ValuesRoots).
	valuesRoots map[string]string
}

// from gives the chart the checkouts of spec.helm.valuesFilesFrom's sources.
func (c chartSource) from(roots map[string]string) chartSource {
	c.valuesRoots = roots
	return c
}

// valuesFileFrom reads one of spec.helm.valuesFilesFrom, unparsed, confined to its
// source's checkout.
func (c chartSource) valuesFileFrom(ref gitsyncv1.ValuesFileReference) ([]byte, error) {
	root, ok := c.valuesRoots[ref.SourceRef.Key()]
	if !ok {
		return nil, &ValuesError{fmt.Errorf("values file %s of %s: the source's checkout is not available", ref.Path, ref.SourceRef.Key())}
	}
	data, err := helm.ReadValuesData(root, root, ref.Path)
	if err != nil {
		return nil, &ValuesError{fmt.Errorf("%s: %w", ref.SourceRef.Key(), err)}
	}
	return data, nil
}

// dirChart is the chart in chartDir, confined to the checkout at root.
func dirChart(root, chartDir string) chartSource {
	return chartSource{
		load: func() (*chart.Chart, error) { return helm.LoadDir(root, chartDir) },
		valuesFile: func(_ *chart.Chart, name string) ([]byte, error) {
			return helm.ReadValuesData(root, chartDir, name)
		},
	}
}

// archiveChart is a chart archive downloaded from a HelmRepository.
func archiveChart(file string) chartSource {
	return chartSource{
		load:       func() (*chart.Chart, error) { return helm.LoadArchive(file) },
		valuesFile: helm.ChartValuesData,
	}
}

// renderChart renders the chart with spec.helm: valuesFiles from the source, then
// valuesFrom, then inline values, over the chart's values.yaml; capabilities, lookup,
// valuesFrom and dependencies from cluster. The chart's crds/ come first unless
// spec.helm.crds is Skip; the returned Chart names them all. .Release.IsUpgrade is set
// once the Application has an inventory. filter, when set, sees the values files and
// the rendered templates (decryption: an encrypted valuesFile, a template that is a
// SOPS document).
func renderChart(ctx context.Context, app *gitsyncv1.Application, src chartSource, cluster *Cluster, filter build.Filter) ([]*unstructured.Unstructured, Chart, error) {
	if filter == nil {
		filter = func(_ string, data []byte) ([]byte, error) { return data, nil }
	}
	var none Chart
	spec := app.Spec.Helm
	if spec == nil {
		spec = &gitsyncv1.HelmSpec{}
	}
	c, err := src.load()
	if err != nil {
		return nil, none, err
	}
	if cluster.Dependencies != nil {
		if err := cluster.Dependencies(ctx, c); err != nil {
			return nil, none, err
		}
	}
	if err := helm.CheckDependencies(c); err != nil {
		return nil, none, err
	}
	var values []map[string]any
	for _, f := range spec.ValuesFiles {
		data, err := src.valuesFile(c, f)
		if err != nil {
			return nil, none, err
		}
		if data, err = filter(f, data); err != nil {
			return nil, none, err
		}
		v, err := helm.ParseValues(f, data)
		if err != nil {
			return nil, none, err
		}
		values = append(values, v)
	}
	for _, ref := range spec.ValuesFilesFrom {
		name := ref.SourceRef.Key() + ":" + ref.Path
		data, err := src.valuesFileFrom(ref)
		if err != nil {
			return nil, none, err
		}
		if data, err = filter(ref.Path, data); err != nil {
			return nil, none, err
		}
		v, err := helm.ParseValues(name, data)
		if err != nil {
			return nil, none, err
		}
		values = append(values, v)
	}
	var secrets []string // values read from Secrets: no error may quote them
	for _, ref := range spec.ValuesFrom {
		if cluster.Values == nil {
			return nil, none, errNoValues(ref)
		}
		v, err := cluster.Values(ctx, ref)
		if err != nil {
			return nil, none, err
		}
		if v != nil {
			values = append(values, v)
			if ref.Kind == "Secret" {
				secrets = appendLeaves(secrets, v)
			}
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
		Namespace:   app.DefaultNamespace(),
		Tenant:      app.Namespace, // render slots are shared per Application namespace, not per target
		IsUpgrade:   app.Status.Inventory != nil && len(app.Status.Inventory.Entries) > 0,
		Values:      values,
		SkipCRDs:    spec.CRDs == gitsyncv1.HelmCRDsSkip,
		Lookup:      cluster.Lookup,
	}
	if opts.ReleaseName == "" {
		opts.ReleaseName = app.Name
	}
	if cluster.Discovery != nil {
		if opts.Capabilities, err = helm.ClusterCapabilities(cluster.Discovery); err != nil {
			return nil, none, err
		}
	}
	rendered, err := helm.Render(ctx, c, opts)
	if err != nil {
		return nil, none, helm.RedactSecrets(err, secrets...)
	}
	info := Chart{Name: rendered.Chart, Version: rendered.Version}
	files := make([]build.File, 0, len(rendered.Templates))
	for _, m := range rendered.Templates {
		data, err := filter(m.Name, m.Data)
		if err != nil {
			return nil, none, err
		}
		files = append(files, build.File{Name: m.Name, Data: data})
	}
	objs, err := build.Decode(files)
	if err != nil {
		return nil, none, helm.RedactSecrets(err, secrets...)
	}
	crds, err := chartCRDs(c)
	if err != nil {
		return nil, none, err
	}
	info.CRDs = make(map[string]bool, len(crds))
	for _, crd := range crds {
		info.CRDs[apply.EntryOf(crd).ID] = true
	}
	switch spec.CRDs {
	case gitsyncv1.HelmCRDsSkip:
		return objs, info, nil
	case gitsyncv1.HelmCRDsCreateReplace:
	default:
		info.CreateOnly = true
	}
	return append(crds, objs...), info, nil
}

// chartCRDs decodes the files of the chart's crds/ folders (its own and its subcharts').
func chartCRDs(c *chart.Chart) ([]*unstructured.Unstructured, error) {
	var files []build.File
	for _, crd := range c.CRDObjects() {
		files = append(files, build.File{Name: crd.Filename, Data: crd.File.Data})
	}
	return build.Decode(files)
}

// appendLeaves appends the scalar values of v (a values map), as text.
func appendLeaves(out []string, v any) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			out = appendLeaves(out, x)
		}
	case []any:
		for _, x := range t {
			out = appendLeaves(out, x)
		}
	case string:
		out = append(out, t)
	case nil:
	default:
		out = append(out, fmt.Sprint(t))
	}
	return out
}
