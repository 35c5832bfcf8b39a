package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// withChartCRDs returns caps with the group/versions and group/version/kinds that the
// CRDs of the chart's crds/ folders (its own and its subcharts') serve. `helm install`
// creates those CRDs before it reads the cluster's capabilities, so a chart may gate a
// template on `.Capabilities.APIVersions.Has` of its own CRD; gitsync renders before it
// applies (the CRDs go first in the same sync), and so adds them here. A CRD whose kind
// the cluster serves already is left as the cluster has it (helm install does not
// update an existing CRD).
func withChartCRDs(caps *common.Capabilities, c *chart.Chart) (*common.Capabilities, error) {
	served := map[string]bool{} // group/Kind the cluster serves in some version
	for _, v := range caps.APIVersions {
		if parts := strings.Split(v, "/"); len(parts) == 3 {
			served[parts[0]+"/"+parts[2]] = true
		}
	}
	var extra []string
	for _, crd := range c.CRDObjects() {
		kinds, err := servedVersions(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", crd.Filename, err)
		}
		for _, k := range kinds {
			if !served[k.group+"/"+k.kind] {
				extra = append(extra, k.group+"/"+k.version, k.group+"/"+k.version+"/"+k.kind)
			}
		}
	}
	if len(extra) == 0 {
		return caps, nil
	}
	out := caps.Copy()
	out.APIVersions = slices.Concat(caps.APIVersions, extra)
	return out, nil
}

// crdVersion is one served version of a CRD's kind.
type crdVersion struct{ group, version, kind string }

// servedVersions lists the served versions of the CustomResourceDefinitions in a
// (multi-document) YAML file.
func servedVersions(data []byte) ([]crdVersion, error) {
	var out []crdVersion
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var crd struct {
			Kind string `json:"kind"`
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
				} `json:"versions"`
			} `json:"spec"`
		}
		err := dec.Decode(&crd)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding a CRD: %w", err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group == "" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				out = append(out, crdVersion{group: crd.Spec.Group, version: v.Name, kind: crd.Spec.Names.Kind})
			}
		}
	}
}
