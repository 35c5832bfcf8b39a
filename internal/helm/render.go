package helm

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"
)

// Options of one render.
type Options struct {
	// ReleaseName is .Release.Name; Namespace is .Release.Namespace.
	ReleaseName, Namespace string
	// IsUpgrade sets .Release.IsUpgrade (and IsInstall to its opposite), and picks the
	// upgrade's hooks instead of the install's.
	IsUpgrade bool
	// Values are merged over the chart's defaults in order, later ones winning:
	// valuesFiles, then valuesFrom, then the inline values.
	Values []map[string]any
	// Capabilities are the cluster's (see ClusterCapabilities); Helm's defaults when nil.
	// Unless SkipCRDs, what the chart's crds/ serve is added (helm install creates them
	// before it reads the capabilities).
	Capabilities *common.Capabilities
	// Lookup serves the `lookup` function; without it, lookup finds nothing.
	Lookup engine.ClientProvider
	// SkipCRDs leaves out the chart's crds/ folder.
	SkipCRDs bool
	// Tenant is the namespace of the Application that renders: render slots are shared
	// fairly between tenants (see slotQueue). Namespace when empty.
	Tenant string
}

// Manifest is one rendered file.
type Manifest struct {
	// Name is the file's path in the chart, e.g. "podinfo/templates/deployment.yaml".
	Name string
	Data []byte
}

// Rendered is what a chart rendered to.
type Rendered struct {
	// CRDs are the files of the chart's crds/ folder (and of its subcharts').
	CRDs []Manifest
	// Templates are the rendered templates, in name order, without NOTES.txt, partials
	// and the tests/ folder, split into documents as helm splits them, and without the
	// hooks of the other kind of release (see firesOn).
	Templates []Manifest
	// Chart and Version name the chart.
	Chart, Version string
}

// Render renders c with opts. A template error names the template file and line; a
// chart whose kubeVersion the cluster does not match is refused.
func Render(ctx context.Context, c *chart.Chart, opts Options) (*Rendered, error) {
	vals := map[string]any{}
	for _, v := range opts.Values {
		vals = mergeValues(vals, v)
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, fmt.Errorf("processing the chart's dependencies: %w", err)
	}
	caps := opts.Capabilities
	if caps == nil {
		caps = common.DefaultCapabilities.Copy()
	}
	// As helm install and helm template do: the chart's kubeVersion must match the cluster.
	if want := c.Metadata.KubeVersion; want != "" && !chartutil.IsCompatibleRange(want, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s requires kubeVersion %s, which is incompatible with Kubernetes %s",
			c.Name(), want, caps.KubeVersion.Version)
	}
	if !opts.SkipCRDs {
		var err error
		if caps, err = withChartCRDs(caps, c); err != nil {
			return nil, err
		}
	}
	release := common.ReleaseOptions{
		Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1,
		IsInstall: !opts.IsUpgrade, IsUpgrade: opts.IsUpgrade,
	}
	// Helm's own schema validation quotes the offending values and fetches external
	// $refs: it is skipped, and ValidateSchema runs instead.
	renderVals, err := util.ToRenderValuesWithSchemaValidation(c, vals, release, caps, true)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if err := ValidateSchema(c, renderVals["Values"].(common.Values)); err != nil {
		return nil, err
	}
	tenant := opts.Tenant
	if tenant == "" {
		tenant = opts.Namespace
	}
	files, err := renderBounded(ctx, tenant, c, renderVals, opts.Lookup)
	if err != nil {
		return nil, err
	}
	out := &Rendered{Chart: c.Name(), Version: c.Metadata.Version}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || strings.Contains(name, "/tests/") {
			continue
		}
		var docs []string
		for _, doc := range documents(files[name]) {
			if firesOn(doc, opts.IsUpgrade) {
				docs = append(docs, doc)
			}
		}
		if len(docs) == 0 {
			continue
		}
		out.Templates = append(out.Templates, Manifest{Name: name, Data: joinDocuments(docs)})
	}
	if !opts.SkipCRDs {
		for _, crd := range c.CRDObjects() {
			out.CRDs = append(out.CRDs, Manifest{Name: crd.Filename, Data: crd.File.Data})
		}
	}
	return out, nil
}

// mergeValues merges src over dst: maps merge key by key, anything else in src replaces.
// (Helm's own merge of several -f files is not exported.)
func mergeValues(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// ReadValuesFile reads a values file named relative to the chart directory, confined to
// root (no symlink, no path leaving the checkout).
func ReadValuesFile(root, chartDir, name string) (map[string]any, error) {
	data, err := ReadValuesData(root, chartDir, name)
	if err != nil {
		return nil, err
	}
	return ParseValues(name, data)
}

// ReadValuesData reads the bytes of a values file as ReadValuesFile does, unparsed: no
// component from the checkout's root down may be a symlink, and the file must be a
// regular one of at most MaxFileSize bytes (see readConfined).
func ReadValuesData(root, chartDir, name string) ([]byte, error) {
	rootAbs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	p, err := filepath.Abs(filepath.Join(chartDir, name))
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(rootAbs, p)
	if err != nil || !within(rootAbs, p) || rel == "." {
		return nil, fmt.Errorf("values file %s is outside the checkout", name)
	}
	data, err := readConfined(rootAbs, rel, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("values file %s: %w", name, err)
	}
	return data, nil
}

// ParseValues reads YAML values; the error names what they came from, never their content.
// The values are held to the YAML budget first (every document, aliases expanded): the
// YAML reader would expand aliases to millions of values before refusing them.
func ParseValues(from string, data []byte) (map[string]any, error) {
	if err := checkValues(from, data); err != nil {
		return nil, err
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("values %s are not a YAML map", from)
	}
	return vals, nil
}

// ClusterCapabilities reads .Capabilities from the cluster: its version and every
// group/version and group/version/kind it serves.
func ClusterCapabilities(dc discovery.DiscoveryInterface) (*common.Capabilities, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the server version: %w", err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the server's API versions: %w", err)
	}
	var set []string
	for _, l := range lists {
		set = append(set, l.GroupVersion)
		for _, r := range l.APIResources {
			set = append(set, l.GroupVersion+"/"+r.Kind)
		}
	}
	kv, err := common.ParseKubeVersion(v.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing the server version %q: %w", v.GitVersion, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = common.VersionSet(set)
	return caps, nil
}
