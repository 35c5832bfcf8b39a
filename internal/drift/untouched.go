package drift

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Untouched tells, from an object's metadata alone (the watch cache), that every field of
// desired (as owner applies it, with the owner labels) holds what gitsync last wrote:
// the object carries owner's labels, gitsync's Apply entry in managedFields owns exactly
// desired's fields, and no other writer (status aside) owns any of them. An edit by
// someone else leaves its writer in managedFields, a removal leaves gitsync's entry
// short of a field; either makes Untouched false. So does any shape this cannot follow
// exactly (lists, whose entries managedFields keys by schema): the caller then compares
// with a request.
func Untouched(desired *unstructured.Unstructured, live metav1.Object, owner types.NamespacedName) bool {
	if o, ok := OwnerOf(live.GetLabels()); !ok || o != owner {
		return false
	}
	if _, ok := desired.Object["stringData"]; ok && desired.GroupVersionKind().Group == "" && desired.GetKind() == "Secret" {
		return false // written as stringData, stored as data (see storedLeaves)
	}
	want, ok := appliedLeaves(desired)
	if !ok {
		return false
	}
	for _, p := range ownerLabelPaths {
		want.Insert(p)
	}
	var owned *fieldpath.Set
	var others []managerSet
	for _, e := range live.GetManagedFields() {
		if e.Subresource != "" {
			continue // status is never drift
		}
		d, err := sharedFields(e) // only read below
		if err != nil {
			return false
		}
		if e.Manager != gitsyncv1.FieldManager {
			others = append(others, managerSet{manager: e.Manager, set: d.set})
			continue
		}
		if e.Operation != metav1.ManagedFieldsOperationApply || owned != nil {
			return false
		}
		owned = d.leaves
	}
	if owned == nil || !owned.Equals(want) {
		return false
	}
	if len(others) == 0 {
		return true // no other writer to own any of them
	}
	touched := false
	want.Iterate(func(p fieldpath.Path) {
		if !touched && len(writersOf(p, others)) > 0 {
			touched = true
		}
	})
	return !touched
}

// identityOnly tells whether metadata holds nothing but a name and a namespace.
func identityOnly(metadata map[string]any) bool {
	for k := range metadata {
		if k != "name" && k != "namespace" {
			return false
		}
	}
	return true
}

// ownerLabelPaths are the fields of the owner labels that Apply adds to every object
// (only read: the sets they are inserted into share them).
var ownerLabelPaths = []fieldpath.Path{
	fieldpath.MakePathOrDie("metadata", "labels", gitsyncv1.ApplicationLabel),
	fieldpath.MakePathOrDie("metadata", "labels", gitsyncv1.ApplicationNamespaceLabel),
}

// appliedLeaves returns the leaf fields of obj as a server-side apply records them (the
// identity fields apiVersion, kind, metadata.name and metadata.namespace left out), and
// false when obj holds a list or a null, whose record depends on the schema.
func appliedLeaves(obj *unstructured.Unstructured) (*fieldpath.Set, bool) {
	set := fieldpath.NewSet()
	// walk fills into the set of the fields under the path so far (depth long, the
	// last element's name last): each leaf is a member of its parent's set, as
	// Set.Insert of its whole path would place it, without copying the path.
	var walk func(into *fieldpath.Set, depth int, last string, m map[string]any) bool
	walk = func(into *fieldpath.Set, depth int, last string, m map[string]any) bool {
		for k, v := range m {
			if depth == 0 && (k == "apiVersion" || k == "kind") ||
				depth == 1 && last == "metadata" && (k == "name" || k == "namespace") {
				continue
			}
			pe := fieldpath.PathElement{FieldName: &k}
			switch v := v.(type) {
			case map[string]any:
				if len(v) == 0 {
					into.Members.Insert(pe)
				} else if depth == 0 && k == "metadata" && identityOnly(v) {
					continue // no field of it is recorded: no set for it either
				} else if !walk(into.Children.Descend(pe), depth+1, k, v) {
					return false
				}
			case []any, nil:
				return false
			default:
				into.Members.Insert(pe)
			}
		}
		return true
	}
	if !walk(set, 0, "", obj.Object) {
		return nil, false
	}
	return set, true
}
