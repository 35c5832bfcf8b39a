package drift

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// AppliedField is one field gitsync applied to an object (a leaf of its Apply entry in
// managedFields), for records made outside this process, such as signed sync
// attestations (internal/attest).
type AppliedField struct {
	// Elements is the field's path as managedFields write it: one serialized path
	// element each ("f:spec", `k:{"name":"web"}`), exact enough to find it again.
	Elements []string
	// Path is the field's path as people read it (Field.Path's JSON pointer form).
	Path string
	// Found tells whether the object holds a value there; Value is that value.
	Found bool
	Value any
}

// AppliedFields returns the fields of obj that gitsync applied (the leaves of its Apply
// entry, a Secret's stringData.k read where the API server keeps it, data.k) with obj's
// value at each, sorted by Path. Status and the server's own metadata are left out, as
// Diff leaves them out. It fails when obj has no Apply entry of gitsync.
func AppliedFields(obj *unstructured.Unstructured) ([]AppliedField, error) {
	owned, err := gitsyncSet(obj)
	if err != nil {
		return nil, err
	}
	leaves, _ := storedLeaves(obj, owned.Leaves())
	var out []AppliedField
	var failed error
	leaves.Iterate(func(p fieldpath.Path) {
		tokens := formatPathTokens(p)
		if underAny(tokens, excludedPaths) || failed != nil {
			return
		}
		elements := make([]string, len(p))
		for i, pe := range p {
			s, err := fieldpath.SerializePathElement(pe)
			if err != nil {
				failed = fmt.Errorf("field %s: %w", joinPointer(tokens), err)
				return
			}
			elements[i] = s
		}
		l := locate(obj.Object, p)
		out = append(out, AppliedField{Elements: elements, Path: joinPointer(tokens), Found: l.found, Value: l.value})
	})
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// FieldAt reads obj at a path written as AppliedField.Elements, and returns the field
// managers other than gitsync that own it there (sorted; as Diff names a drifted field's
// writers).
func FieldAt(obj *unstructured.Unstructured, elements []string) (AppliedField, []string, error) {
	p := make(fieldpath.Path, len(elements))
	for i, s := range elements {
		pe, err := fieldpath.DeserializePathElement(s)
		if err != nil {
			return AppliedField{}, nil, fmt.Errorf("field path element %q: %w", strings.ToValidUTF8(s, "?"), err)
		}
		p[i] = pe
	}
	others, err := otherManagers(obj)
	if err != nil {
		return AppliedField{}, nil, err
	}
	l := locate(obj.Object, p)
	f := AppliedField{Elements: elements, Path: joinPointer(formatPathTokens(p)), Found: l.found, Value: l.value}
	return f, writersOf(p, others), nil
}
