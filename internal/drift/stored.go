package drift

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// storedLeaves returns leaves (the fields gitsync owns in desired) as the API server
// stores them, so that Diff compares what is there rather than what was written.
//
// A core Secret's stringData is write-only: the API server merges stringData.k into
// data.k and never stores stringData, yet gitsync's managedFields entry names
// stringData.k (what it applied). Comparing that would see nothing on either side, so a
// `kubectl edit` of data.k would never be drift. Each owned stringData.k is compared as
// data.k instead (the dry-run's data.k holds Git's value). writtenAs maps the pointer
// of such a data.k to the stringData.k path, for ignore rules written either way and for
// the managers that wrote it through stringData.
func storedLeaves(desired *unstructured.Unstructured, leaves *fieldpath.Set) (*fieldpath.Set, map[string]fieldpath.Path) {
	gvk := desired.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Secret" {
		return leaves, nil
	}
	out := fieldpath.NewSet()
	writtenAs := map[string]fieldpath.Path{}
	leaves.Iterate(func(p fieldpath.Path) {
		if len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "stringData" && p[1].FieldName != nil {
			data := fieldpath.MakePathOrDie("data", *p[1].FieldName)
			out.Insert(data)
			writtenAs[joinPointer(formatPathTokens(data))] = p.Copy()
			return
		}
		out.Insert(p)
	})
	return out, writtenAs
}
