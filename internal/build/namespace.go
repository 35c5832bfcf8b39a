package build

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdGroupKind is the GroupKind of CustomResourceDefinitions.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// SetDefaultNamespace sets namespace ns on every object that is namespaced and has
// none; an object with a namespace keeps it. Cluster-scoped objects get their
// namespace cleared.
//
// Whether a kind is namespaced is read first from the CustomResourceDefinitions in
// objs (spec.scope), so that custom resources applied together with their CRD need no
// round trip and work before the CRD is installed; other kinds are asked of
// isNamespaced (typically backed by the cluster's RESTMapper). A kind that neither
// knows is an error naming the object.
func SetDefaultNamespace(objs []*unstructured.Unstructured, ns string, isNamespaced func(schema.GroupKind) (bool, error)) error {
	scopes, err := crdScopes(objs)
	if err != nil {
		return err
	}
	written := make([]string, len(objs)) // each object's namespace as written
	for i, obj := range objs {
		written[i] = obj.GetNamespace()
		gk := obj.GroupVersionKind().GroupKind()
		namespaced, known := scopes[gk]
		if !known {
			if isNamespaced == nil {
				return fmt.Errorf("%s: cannot tell whether %s is namespaced", objectID(obj), gk)
			}
			if namespaced, err = isNamespaced(gk); err != nil {
				hint := ""
				if meta.IsNoMatchError(err) {
					hint = " (is its CustomResourceDefinition installed? A chart's crds/ or a CRD in the same path is applied first)"
				}
				return fmt.Errorf("%s: cannot tell whether %s is namespaced: %w%s", objectID(obj), gk, err, hint)
			}
			scopes[gk] = namespaced
		}
		switch {
		case !namespaced:
			obj.SetNamespace("")
		case obj.GetNamespace() == "":
			obj.SetNamespace(ns)
		}
	}
	return checkDefaultedDuplicates(objs, written)
}

// checkDefaultedDuplicates refuses two objects that became the same object when
// namespaces were defaulted (or cleared, for cluster-scoped kinds): one written without
// a namespace and one with the target namespace are both applied, the last one wins and
// the inventory would list the object twice. Exact duplicates are refused by the build.
func checkDefaultedDuplicates(objs []*unstructured.Unstructured, written []string) error {
	first := make(map[string]int, len(objs))
	for i, obj := range objs {
		id := objectID(obj)
		j, dup := first[id]
		if !dup {
			first[id] = i
			continue
		}
		return fmt.Errorf("%s is defined twice once namespaces are defaulted: as object %d of the render (%s) and as object %d (%s); keep one",
			id, j+1, asWritten(objs[j], written[j]), i+1, asWritten(obj, written[i]))
	}
	return nil
}

// asWritten says how an object was written, before its namespace was defaulted.
func asWritten(obj *unstructured.Unstructured, ns string) string {
	switch {
	case ns == obj.GetNamespace():
		if ns == "" {
			return "without a namespace"
		}
		return "with namespace " + ns
	case ns == "":
		return "without a namespace, defaulted to " + obj.GetNamespace()
	default:
		return fmt.Sprintf("with namespace %s, cleared: the kind is cluster-scoped", ns)
	}
}

// crdScopes maps the kinds defined by the CRDs in objs to whether they are namespaced.
func crdScopes(objs []*unstructured.Unstructured) (map[schema.GroupKind]bool, error) {
	scopes := map[schema.GroupKind]bool{}
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != crdGroupKind {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		if kind == "" {
			return nil, fmt.Errorf("%s: spec.names.kind is not set", objectID(obj))
		}
		switch scope {
		case "Namespaced":
			scopes[schema.GroupKind{Group: group, Kind: kind}] = true
		case "Cluster":
			scopes[schema.GroupKind{Group: group, Kind: kind}] = false
		default:
			return nil, fmt.Errorf("%s: spec.scope must be Namespaced or Cluster, not %q", objectID(obj), scope)
		}
	}
	return scopes, nil
}
