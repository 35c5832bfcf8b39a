// Package transform applies an Application's patches, images and commonMetadata to
// rendered objects — of plain YAML, kustomize or a chart alike — with kustomize's own
// filters (sigs.k8s.io/kustomize/api/filters over kyaml nodes):
//
//   - a patch is a strategic-merge patch (a YAML mapping: patchstrategicmerge, with
//     the Kubernetes OpenAPI schema's merge keys, "$patch: delete" included) or a
//     JSON 6902 patch (a YAML or JSON list of operations: patchjson6902), told apart
//     by its shape as kustomize does; its target selects objects as kustomize's does
//     (group, version, kind, name and namespace are anchored regular expressions; label
//     and annotation selectors);
//   - an image rewrites container and initContainer images anywhere in an object
//     (imagetag, kustomize's images transformer);
//   - commonMetadata sets labels and annotations on every object's metadata, not on
//     selectors or templates (labels and annotations filters), as Flux does.
//
// The strategic merge reads kyaml's global OpenAPI schema: a caller that also runs
// kustomize builds which set another schema must not run both at once.
package transform

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/filters/annotations"
	"sigs.k8s.io/kustomize/api/filters/imagetag"
	"sigs.k8s.io/kustomize/api/filters/labels"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/fluxcd/pkg/ssa/utils"
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Options are the transformations of an Application's spec.
type Options struct {
	// Patches are applied first, in order.
	Patches []gitsyncv1.Patch
	// Images are applied next, in order.
	Images []gitsyncv1.Image
	// CommonMetadata is applied last.
	CommonMetadata *gitsyncv1.CommonMetadata
}

// Empty tells whether o changes nothing.
func (o Options) Empty() bool {
	return len(o.Patches) == 0 && len(o.Images) == 0 &&
		(o.CommonMetadata == nil || len(o.CommonMetadata.Labels)+len(o.CommonMetadata.Annotations) == 0)
}

// Apply returns objs transformed by opts, in their order (a strategic-merge patch with
// "$patch: delete" removes its targets). objs are not modified. Errors name the patch
// (by its index in spec.patches) or image, and the object being patched.
func Apply(objs []*unstructured.Unstructured, opts Options) ([]*unstructured.Unstructured, error) {
	if opts.Empty() {
		return objs, nil
	}
	nodes := make([]*yaml.RNode, 0, len(objs))
	for _, obj := range objs {
		n, err := toNode(obj)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", utils.FmtUnstructured(obj), err)
		}
		nodes = append(nodes, n)
	}
	var err error
	for i, p := range opts.Patches {
		if nodes, err = applyPatch(nodes, p); err != nil {
			return nil, fmt.Errorf("spec.patches[%d]: %w", i, err)
		}
	}
	for i, img := range opts.Images {
		f := imagetag.LegacyFilter{ImageTag: types.Image{
			Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest,
		}}
		if nodes, err = f.Filter(nodes); err != nil {
			return nil, fmt.Errorf("spec.images[%d] (%s): %w", i, img.Name, err)
		}
	}
	if cm := opts.CommonMetadata; cm != nil {
		if nodes, err = commonMetadata(nodes, cm); err != nil {
			return nil, fmt.Errorf("spec.commonMetadata: %w", err)
		}
	}
	out := make([]*unstructured.Unstructured, 0, len(nodes))
	for _, n := range nodes {
		obj, err := fromNode(n)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// commonMetadata sets cm's labels and annotations on every node's metadata.
func commonMetadata(nodes []*yaml.RNode, cm *gitsyncv1.CommonMetadata) ([]*yaml.RNode, error) {
	var err error
	if len(cm.Labels) > 0 {
		f := labels.Filter{
			Labels:  cm.Labels,
			FsSlice: types.FsSlice{{Path: "metadata/labels", CreateIfNotPresent: true}},
		}
		if nodes, err = f.Filter(nodes); err != nil {
			return nil, fmt.Errorf("labels: %w", err)
		}
	}
	if len(cm.Annotations) > 0 {
		f := annotations.Filter{
			Annotations: cm.Annotations,
			FsSlice:     types.FsSlice{{Path: "metadata/annotations", CreateIfNotPresent: true}},
		}
		if nodes, err = f.Filter(nodes); err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
	}
	return nodes, nil
}

// toNode converts an object to a kyaml node, through JSON.
func toNode(obj *unstructured.Unstructured) (*yaml.RNode, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return yaml.ConvertJSONToYamlNode(string(data))
}

// fromNode converts a kyaml node back to an object, through JSON, so that numbers are
// int64 or float64 as unstructured requires.
func fromNode(n *yaml.RNode) (*unstructured.Unstructured, error) {
	data, err := n.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("writing %s/%s: %w", n.GetKind(), n.GetName(), err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("writing %s/%s: %w", n.GetKind(), n.GetName(), err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// describeNode names a node as utils.FmtUnstructured names an object.
func describeNode(n *yaml.RNode) string {
	if ns := n.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s/%s/%s", n.GetKind(), ns, n.GetName())
	}
	return fmt.Sprintf("%s/%s", n.GetKind(), n.GetName())
}
