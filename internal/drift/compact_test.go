package drift

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The watch cache keeps what its readers need, shares what objects have in common, and
// drops the rest: status entries, annotations, owners, finalizers, UID.
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
	var cached []*metav1.PartialObjectMetadata
	for _, name := range []string{"a", "b"} {
		orig := live(name)
		c, err := w.compact(live(name)) // compact changes the object it is handed
		if err != nil {
			t.Fatal(err)
		}
		m := c.(*metav1.PartialObjectMetadata)
		if m.Name != name || m.Namespace != "demo" || m.ResourceVersion != "7" || !reflect.DeepEqual(m.Labels, orig.Labels) {
			t.Errorf("kept %+v, want the name, namespace, resourceVersion and labels of %+v", m.ObjectMeta, orig.ObjectMeta)
		}
		if m.UID != "" || m.Annotations != nil || m.Finalizers != nil || m.OwnerReferences != nil {
			t.Errorf("kept %+v, want no UID, annotations, finalizers or owners", m.ObjectMeta)
		}
		if len(m.ManagedFields) != 2 || m.ManagedFields[0].Manager != "gitsync" || m.ManagedFields[1].Manager != "kubectl-edit" {
			t.Errorf("kept managedFields %+v, want gitsync's and kubectl-edit's entries, not the status one", m.ManagedFields)
		}
		if Fingerprint(m) != Fingerprint(orig) {
			t.Error("the cached copy's fingerprint differs from the object's")
		}
		cached = append(cached, m)
	}
	a, b := cached[0], cached[1]
	if reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() {
		t.Error("equal labels are held twice")
	}
	if &a.ManagedFields[0] != &b.ManagedFields[0] {
		t.Error("equal managedFields lists are held twice")
	}
	for i := range a.ManagedFields {
		if a.ManagedFields[i].FieldsV1 != b.ManagedFields[i].FieldsV1 || a.ManagedFields[i].Time != b.ManagedFields[i].Time {
			t.Errorf("managedFields entry %d: equal fields or times are held twice", i)
		}
	}
	third := live("c")
	c, _ := w.compact(third)
	if reflect.ValueOf(c.(*metav1.PartialObjectMetadata).Labels).Pointer() != reflect.ValueOf(a.Labels).Pointer() {
		t.Error("a third object does not share the labels")
	}
	if c != any(third) {
		t.Error("compact made a second object: the one handed to it is the one to keep (the cached objects' spans would be half garbage)")
	}
}
