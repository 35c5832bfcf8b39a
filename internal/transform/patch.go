package transform

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/filters/patchjson6902"
	"sigs.k8s.io/kustomize/api/filters/patchstrategicmerge"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// applyPatch applies one patch to the nodes it selects and returns the nodes in order,
// without those a "$patch: delete" removed.
func applyPatch(nodes []*yaml.RNode, p gitsyncv1.Patch) ([]*yaml.RNode, error) {
	jsonPatch, smps, err := parsePatch(p.Patch)
	if err != nil {
		return nil, err
	}
	if jsonPatch {
		if p.Target == nil {
			return nil, errors.New("a JSON 6902 patch needs a target")
		}
		sel, err := newSelector(p.Target)
		if err != nil {
			return nil, err
		}
		for i, n := range nodes {
			ok, err := sel.matches(n)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			out, err := patchjson6902.Filter{Patch: p.Patch}.Filter([]*yaml.RNode{n})
			if err != nil {
				return nil, fmt.Errorf("patching %s: %w", describeNode(n), err)
			}
			nodes[i] = out[0]
		}
		return nodes, nil
	}
	for _, smp := range smps {
		if nodes, err = applySMP(nodes, smp, p.Target); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// parsePatch tells a JSON 6902 patch (a list) from strategic-merge patches (one or
// more mappings) and returns the latter.
func parsePatch(text string) (jsonPatch bool, smps []*yaml.RNode, err error) {
	if strings.TrimSpace(text) == "" {
		return false, nil, errors.New("the patch is empty")
	}
	first, err := yaml.Parse(text)
	if err != nil {
		return false, nil, fmt.Errorf("parsing the patch: %w", err)
	}
	if first.YNode().Kind == yaml.SequenceNode {
		return true, nil, nil
	}
	docs, err := (&kio.ByteReader{Reader: strings.NewReader(text), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return false, nil, fmt.Errorf("parsing the patch: %w", err)
	}
	for _, d := range docs {
		if d.YNode().Kind != yaml.MappingNode {
			return false, nil, errors.New("the patch is neither a JSON 6902 list of operations nor a strategic-merge mapping")
		}
	}
	return false, docs, nil
}

// applySMP applies one strategic-merge patch document. With a target it patches every
// selected node (the patch takes each one's apiVersion, kind, name and namespace, as
// kustomize's patch transformer does); without, the one node its own apiVersion, kind,
// name and (when set) namespace identify, which must exist.
func applySMP(nodes []*yaml.RNode, smp *yaml.RNode, target *gitsyncv1.PatchSelector) ([]*yaml.RNode, error) {
	var match func(*yaml.RNode) (bool, error)
	if target != nil {
		sel, err := newSelector(target)
		if err != nil {
			return nil, err
		}
		match = sel.matches
	} else {
		if smp.GetKind() == "" || smp.GetName() == "" {
			return nil, errors.New("a strategic-merge patch without a target needs its own kind and metadata.name")
		}
		match = func(n *yaml.RNode) (bool, error) {
			return n.GetApiVersion() == smp.GetApiVersion() && n.GetKind() == smp.GetKind() &&
				n.GetName() == smp.GetName() &&
				(smp.GetNamespace() == "" || n.GetNamespace() == smp.GetNamespace()), nil
		}
	}
	out := make([]*yaml.RNode, 0, len(nodes))
	matched := 0
	for _, n := range nodes {
		ok, err := match(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, n)
			continue
		}
		matched++
		patch := smp.Copy()
		if target != nil {
			patch.SetApiVersion(n.GetApiVersion())
			patch.SetKind(n.GetKind())
			if err := patch.SetName(n.GetName()); err != nil {
				return nil, err
			}
			if err := patch.SetNamespace(n.GetNamespace()); err != nil {
				return nil, err
			}
		}
		res, err := patchstrategicmerge.Filter{Patch: patch}.Filter([]*yaml.RNode{n})
		if err != nil {
			return nil, fmt.Errorf("patching %s: %w", describeNode(n), err)
		}
		if len(res) == 1 && !res[0].IsNilOrEmpty() {
			out = append(out, res[0])
		} // else "$patch: delete" removed it
	}
	if target == nil {
		id := fmt.Sprintf("%s %s/%s", smp.GetApiVersion(), smp.GetKind(), smp.GetName())
		switch {
		case matched == 0:
			return nil, fmt.Errorf("no object is %s", id)
		case matched > 1:
			return nil, fmt.Errorf("%d objects are %s in different namespaces: set metadata.namespace in the patch or a target", matched, id)
		}
	}
	return out, nil
}

// selector is a patch target, compiled.
type selector struct {
	re                 *types.SelectorRegex
	labels, annotation string
}

func newSelector(t *gitsyncv1.PatchSelector) (*selector, error) {
	re, err := types.NewSelectorRegex(&types.Selector{
		ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
			Name:      t.Name,
			Namespace: t.Namespace,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return &selector{re: re, labels: t.LabelSelector, annotation: t.AnnotationSelector}, nil
}

// matches tells whether n is selected: every field that is set matches.
func (s *selector) matches(n *yaml.RNode) (bool, error) {
	if !s.re.MatchGvk(resid.GvkFromNode(n)) || !s.re.MatchName(n.GetName()) || !s.re.MatchNamespace(n.GetNamespace()) {
		return false, nil
	}
	if s.labels != "" {
		ok, err := n.MatchesLabelSelector(s.labels)
		if err != nil {
			return false, fmt.Errorf("target.labelSelector: %w", err)
		}
		if !ok {
			return false, nil
		}
	}
	if s.annotation != "" {
		ok, err := n.MatchesAnnotationSelector(s.annotation)
		if err != nil {
			return false, fmt.Errorf("target.annotationSelector: %w", err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
