package drift

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The watch cache keeps what its readers need, shares what objects have in common, and
// drops the rest: status entries, annotations, owners, finalizers, UID (a Meta has no
// room for them).
func TestCompact(t *testing.T) {
	labelled := strings.Replace(settingsInGit, "  annotations:", "  labels:\n    gitsync.dev/application: demo\n    gitsync.dev/application-namespace: gitsync-system\n  annotations:", 1)
	status := strings.Replace(updateBy("kubelet", "    f:status:\n      f:phase: {}"), "  operation:", "  subresource: status\n  operation:", 1)
	edit := updateBy("kubectl-edit", "    f:data:\n      f:size: {}")
	live := func(name string) *metav1.PartialObjectMetadata {
		u := object(t, strings.Replace(labelled, "name: settings", "name: "+name, 1), settingsByGitsync, edit, status)
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Finalizers: []string{"f"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}}, ManagedFields: u.GetManagedFields(),
		}}
	}
	w := &Watches{}
	var cached []*Meta
	for _, name := range []string{"a", "b"} {
		orig := live(name)
		c, err := w.compact(live(name))
		if err != nil {
			t.Fatal(err)
		}
		m := c.(*Meta)
		if m.GetName() != name || m.GetNamespace() != "demo" || m.GetResourceVersion() != "7" || !reflect.DeepEqual(m.GetLabels(), orig.Labels) {
			t.Errorf("kept %+v, want the name, namespace, resourceVersion and labels of %+v", *m, orig.ObjectMeta)
		}
		if len(m.managedFields) != 2 || m.managedFields[0].Manager != "gitsync" || m.managedFields[1].Manager != "kubectl-edit" {
			t.Errorf("kept managedFields %+v, want gitsync's and kubectl-edit's entries, not the status one", m.managedFields)
		}
		if again, _ := w.compact(m); again != any(m) {
			t.Error("compacting a cached Meta again (a cache's Replace does) made another object")
		}
		if Fingerprint(m) != Fingerprint(orig) {
			t.Error("the cached copy's fingerprint differs from the object's")
		}
		cached = append(cached, m)
	}
	a, b := cached[0], cached[1]
	if reflect.ValueOf(a.labels).Pointer() != reflect.ValueOf(b.labels).Pointer() {
		t.Error("equal labels are held twice")
	}
	if &a.managedFields[0] != &b.managedFields[0] {
		t.Error("equal managedFields lists are held twice")
	}
	for i := range a.managedFields {
		if a.managedFields[i].FieldsV1 != b.managedFields[i].FieldsV1 || a.managedFields[i].Time != b.managedFields[i].Time {
			t.Errorf("managedFields entry %d: equal fields or times are held twice", i)
		}
	}
	c, _ := w.compact(live("c"))
	if reflect.ValueOf(c.(*Meta).labels).Pointer() != reflect.ValueOf(a.labels).Pointer() {
		t.Error("a third object does not share the labels")
	}
	// One is kept per managed object: its size is most of the caches' memory.
	if meta, full := unsafe.Sizeof(Meta{}), unsafe.Sizeof(metav1.PartialObjectMetadata{}); meta > full/3 {
		t.Errorf("a Meta takes %d bytes, a PartialObjectMetadata %d: want a third or less", meta, full)
	}
}
