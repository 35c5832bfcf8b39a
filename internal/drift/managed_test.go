package drift

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Untouched decodes equal managedFields sets once: a restart checks every object of
// every Application, whose entries mostly carry the same fields.
func TestSharedFieldsDecodesEqualSetsOnce(t *testing.T) {
	entry := func(raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "gitsync", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	a, err := sharedFields(entry(`{"f:data":{"f:value":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sharedFields(entry(`{"f:data":{"f:value":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.set != b.set || a.leaves != b.leaves {
		t.Error("equal fields (in two byte slices) were decoded twice")
	}
	if want := fieldpath.NewSet(fieldpath.MakePathOrDie("data", "value")); !a.leaves.Equals(want) {
		t.Errorf("leaves %v, want %v", a.leaves, want)
	}
	other, err := sharedFields(entry(`{"f:data":{"f:size":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if other.set == a.set || other.set.Equals(a.set) {
		t.Errorf("other fields share the first set: %v", other)
	}
	if _, err := sharedFields(entry(`{"f:data":`)); err == nil {
		t.Error("a broken set decoded without an error")
	}
}
