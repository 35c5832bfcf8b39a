package build

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// kustomizeGroup is the API group of kustomization files.
const kustomizeGroup = "kustomize.config.k8s.io"

// decodeManifests parses data, the content of the file name (relative to the
// checkout, used in errors), as a stream of YAML documents (JSON is YAML too) and
// returns the objects in document order. Empty documents are skipped and lists
// (kind List, or any kind ending in "List" with an items array, as kustomize does)
// are replaced by their items.
//
// YAML is read with YAML 1.2 rules, as kustomize reads it, so that a directory
// renders the same objects whether or not a kustomization lists its files: "yes"
// stays a string, timestamps stay the text that was written.
//
// The values of every document are counted in b (the YAML budget) before the document
// is converted.
func decodeManifests(name string, data []byte, b *budget) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, redactError(fixYAMLLine(err)))
		}
		if len(n.Content) == 0 || n.Content[0].ShortTag() == "!!null" {
			continue
		}
		// Counted before it is expanded: the converter copies what aliases name.
		if err := b.values.Document(name, doc, &n); err != nil {
			return nil, err
		}
		top := n.Content[0]
		where := fmt.Sprintf("%s: document %d (line %d)", name, doc, top.Line)
		c := converter{}
		v, err := c.value(top)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", where, redactError(err))
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: expected a Kubernetes object, found a %s", where, describe(top))
		}
		if objs, err = appendObjects(objs, where, m); err != nil {
			return nil, err
		}
	}
}

// appendObjects validates m and appends it to objs, or its items if it is a list.
func appendObjects(objs []*unstructured.Unstructured, where string, m map[string]any) ([]*unstructured.Unstructured, error) {
	kind, _ := m["kind"].(string)
	if items, ok := m["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		for i, item := range items {
			im, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s item %d is not an object", where, kind, i)
			}
			var err error
			if objs, err = appendObjects(objs, fmt.Sprintf("%s, %s item %d", where, kind, i), im); err != nil {
				return nil, err
			}
		}
		return objs, nil
	}
	obj := &unstructured.Unstructured{Object: m}
	if err := validateObject(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return append(objs, obj), nil
}

// validateObject requires what applying an object needs: apiVersion, kind and
// metadata.name, all strings.
func validateObject(obj *unstructured.Unstructured) error {
	for _, field := range []string{"apiVersion", "kind"} {
		if s, ok := obj.Object[field].(string); !ok || s == "" {
			return fmt.Errorf("object has no %s", field)
		}
	}
	if _, ok := obj.Object["metadata"].(map[string]any); !ok {
		return fmt.Errorf("%s has no metadata", obj.GetKind())
	}
	name, ok := obj.Object["metadata"].(map[string]any)["name"].(string)
	if (!ok || name == "") && !(obj.GetGenerateName() != "" && isHook(obj)) {
		if obj.GetGenerateName() != "" {
			return fmt.Errorf("%s has no metadata.name (generateName is only for hooks: annotate it gitsync.dev/hook)", obj.GetKind())
		}
		return fmt.Errorf("%s has no metadata.name", obj.GetKind())
	}
	if obj.GroupVersionKind().Group == kustomizeGroup {
		return fmt.Errorf("%s %q is a kustomize file, not a Kubernetes object: "+
			"only the Application's path itself is built with kustomize, so point the path at its directory", obj.GetKind(), name)
	}
	return nil
}

// converter turns a yaml.Node into the JSON-compatible values unstructured objects
// hold: map[string]any, []any, string, int64, float64, bool and nil.
// It counts the values it makes, keys included (as checkYAML counts YAML nodes).
type converter struct {
	nodes  int
	inside map[*yaml.Node]bool // anchors being expanded, to catch an alias to itself
}

func (c *converter) value(n *yaml.Node) (any, error) {
	c.nodes++
	if c.nodes > yamlbudget.MaxValues { // not reached: the budget counted the document
		return nil, fmt.Errorf("line %d: document expands to more than %d values", n.Line, yamlbudget.MaxValues)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		if c.inside[n.Alias] {
			return nil, fmt.Errorf("line %d: alias *%s refers to itself", n.Line, n.Value)
		}
		if c.inside == nil {
			c.inside = map[*yaml.Node]bool{}
		}
		c.inside[n.Alias] = true
		defer delete(c.inside, n.Alias)
		return c.value(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// mapping converts a mapping. Keys written in it win over keys brought in by merge
// keys ("<<: *anchor"); among merged mappings the first one wins.
func (c *converter) mapping(n *yaml.Node) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: mapping keys must be scalars", k.Line)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("line %d: mapping key %q already defined", k.Line, k.Value)
		}
		c.nodes++ // the key: values and keys are counted alike, as YAML nodes
		val, err := c.value(v)
		if err != nil {
			return nil, err
		}
		out[k.Value] = val
	}
	for _, m := range merges {
		sources := []*yaml.Node{m}
		if resolved := resolveAlias(m); resolved.Kind == yaml.SequenceNode {
			sources = resolved.Content
		}
		for _, s := range sources {
			v, err := c.value(s)
			if err != nil {
				return nil, err
			}
			mm, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: a merge key (<<) needs a mapping or a list of mappings", s.Line)
			}
			for key, val := range mm {
				if _, set := out[key]; !set {
					out[key] = val
				}
			}
		}
	}
	return out, nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// scalar converts a scalar by its resolved tag. Strings, timestamps, binary and
// custom tags keep the text as written.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		if v, ok := decimal(n.Value); ok && n.ShortTag() == "!!int" {
			return v, nil // the common case, without a decoder per value
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, redactError(err))
		}
		switch v := v.(type) {
		case int:
			return int64(v), nil
		case uint64:
			if v <= math.MaxInt64 {
				return int64(v), nil
			}
			return float64(v), nil
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: %s cannot be represented in JSON", n.Line, n.Value)
			}
			return v, nil
		default:
			return v, nil
		}
	default:
		return n.Value, nil
	}
}

// decimal parses s if it is a plain decimal integer ("0", "42", "-7": no sign "+", no
// leading zero, no "_", which YAML reads in other ways) that fits an int64.
func decimal(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// describe names the YAML type of a node for error messages.
func describe(n *yaml.Node) string {
	switch resolveAlias(n).Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar " + strings.TrimPrefix(n.ShortTag(), "!!")
	}
	return "non-object"
}

// hookAnnotations mark hooks (gitsync's, Argo CD's, Helm's): they are created rather
// than applied, so they may use generateName.
var hookAnnotations = []string{"gitsync.dev/hook", "argocd.argoproj.io/hook", "helm.sh/hook"}

func isHook(obj *unstructured.Unstructured) bool {
	a := obj.GetAnnotations()
	for _, k := range hookAnnotations {
		if a[k] != "" {
			return true
		}
	}
	return false
}
