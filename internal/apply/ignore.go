package apply

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-openapi/jsonpointer"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// respectIgnored sets, in each object of set that ignore gives JSON pointers for and
// that exists, the live values at those pointers (see Options.Ignore). One GET per
// such object; objects without pointers are not read.
func (m *Manager) respectIgnored(ctx context.Context, set []*unstructured.Unstructured, ignore func(*unstructured.Unstructured) []string) error {
	if ignore == nil {
		return nil
	}
	for _, obj := range set {
		pointers := ignore(obj)
		if len(pointers) == 0 {
			continue
		}
		if err := m.keepLive(ctx, obj, pointers); err != nil {
			return err
		}
	}
	return nil
}

// keepLive reads obj's live object and copies its values at pointers into obj. A
// missing object (or kind) leaves obj as it is.
func (m *Manager) keepLive(ctx context.Context, obj *unstructured.Unstructured, pointers []string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s for ignoreDifferences: %w", Subject(obj), err)
	}
	if err := copyIgnored(obj.Object, live.Object, pointers); err != nil {
		return fmt.Errorf("ignoreDifferences of %s: %w", Subject(obj), err)
	}
	return nil
}

// copyIgnored copies live's value at each JSON pointer into obj. A field that live
// lacks is removed from obj's maps, so that the apply leaves it to whoever removed it;
// list items are only ever replaced, never added or removed (indexes would shift).
// Pointers into metadata's identity (apiVersion, kind, name, namespace) are refused.
func copyIgnored(obj, live map[string]any, pointers []string) error {
	for _, p := range pointers {
		ptr, err := jsonpointer.New(p)
		if err != nil {
			return fmt.Errorf("pointer %q: %w", p, err)
		}
		tokens := ptr.DecodedTokens()
		if len(tokens) == 0 || identity(tokens) {
			return fmt.Errorf("pointer %q: cannot ignore an object's identity", p)
		}
		value, found := lookup(live, tokens)
		if found {
			put(obj, tokens, runtime.DeepCopyJSONValue(value))
		} else {
			remove(obj, tokens)
		}
	}
	return nil
}

func identity(tokens []string) bool {
	switch tokens[0] {
	case "apiVersion", "kind":
		return true
	case "metadata":
		return len(tokens) == 1 || tokens[1] == "name" || tokens[1] == "namespace"
	}
	return false
}

// lookup returns the value at tokens in doc.
func lookup(doc any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[t]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// put sets value at tokens in doc, making the maps on the way; it does nothing where
// the path runs through a scalar or past the end of a list.
func put(doc map[string]any, tokens []string, value any) {
	var node any = doc
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				n[t] = value
				return
			}
			next, ok := n[t]
			if !ok || next == nil {
				if _, err := strconv.Atoi(tokens[i+1]); err == nil {
					return // a list item that Git does not have
				}
				next = map[string]any{}
				n[t] = next
			}
			node = next
		case []any:
			j, err := strconv.Atoi(t)
			if err != nil || j < 0 || j >= len(n) {
				return
			}
			if last {
				n[j] = value
				return
			}
			node = n[j]
		default:
			return
		}
	}
}

// remove deletes the map key at tokens in doc, if there is one.
func remove(doc map[string]any, tokens []string) {
	parent, ok := lookup(doc, tokens[:len(tokens)-1])
	if m, isMap := parent.(map[string]any); ok && isMap {
		delete(m, tokens[len(tokens)-1])
	}
}
