package drift

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// settingsInGit is a ConfigMap as Git holds it (no owner labels: Apply adds them).
const settingsInGit = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
  annotations:
    team: a
data:
  mode: fast
  size: "3"
`

// settingsByGitsync is gitsync's Apply entry for settingsInGit.
const settingsByGitsync = `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:mode: {}
      f:size: {}
    f:metadata:
      f:annotations:
        f:team: {}
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`

func updateBy(manager, fields string) string {
	return fmt.Sprintf(`
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
%s
  manager: %s
  operation: Update
  time: "2025-03-01T11:00:00Z"
`, fields, manager)
}

func TestUntouched(t *testing.T) {
	owner := types.NamespacedName{Namespace: "gitsync-system", Name: "demo"}
	labelled := strings.Replace(settingsInGit, "  annotations:", "  labels:\n    gitsync.dev/application: demo\n    gitsync.dev/application-namespace: gitsync-system\n  annotations:", 1)
	live := func(manifest string, managedFields ...string) *metav1.PartialObjectMetadata {
		u := object(t, manifest, managedFields...)
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}, ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), Labels: u.GetLabels(), ManagedFields: u.GetManagedFields(),
		}}
	}
	service := `
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
spec:
  ports:
  - port: 80
`
	cases := []struct {
		name    string
		desired *unstructured.Unstructured
		live    *metav1.PartialObjectMetadata
		want    bool
	}{
		{name: "only gitsync wrote it", desired: object(t, settingsInGit), live: live(labelled, settingsByGitsync), want: true},
		{
			name: "another writer of another field", desired: object(t, settingsInGit), want: true,
			live: live(labelled, settingsByGitsync, updateBy("kubectl-annotate", "    f:metadata:\n      f:annotations:\n        f:note: {}")),
		},
		{
			name: "status writers do not count", desired: object(t, settingsInGit), want: true,
			live: live(labelled, settingsByGitsync, strings.Replace(updateBy("kubelet", "    f:status:\n      f:phase: {}"), "  operation:", "  subresource: status\n  operation:", 1)),
		},
		{
			name: "kubectl edit of a field gitsync applies", desired: object(t, settingsInGit),
			live: live(labelled, settingsByGitsync, updateBy("kubectl-edit", "    f:data:\n      f:size: {}")),
		},
		{
			name: "a field gitsync applied was taken away", desired: object(t, settingsInGit),
			live: live(labelled, strings.Replace(settingsByGitsync, "      f:size: {}\n", "", 1)),
		},
		{
			name: "Git has a field gitsync never applied", desired: object(t, strings.Replace(settingsInGit, "  size: \"3\"", "  size: \"3\"\n  extra: x", 1)),
			live: live(labelled, settingsByGitsync),
		},
		{name: "labelled for another Application", desired: object(t, settingsInGit), live: live(strings.Replace(labelled, "application: demo", "application: other", 1), settingsByGitsync)},
		{name: "no managedFields", desired: object(t, settingsInGit), live: live(labelled)},
		{
			name: "a list: its record depends on the schema", desired: object(t, service),
			live: live(strings.Replace(labelled, "kind: ConfigMap", "kind: Service", 1), strings.Replace(settingsByGitsync, "    f:data:\n      f:mode: {}\n      f:size: {}\n", "    f:spec:\n      f:ports: {}\n", 1)),
		},
		{
			name: "a Secret written as stringData", desired: object(t, strings.Replace(strings.Replace(settingsInGit, "kind: ConfigMap", "kind: Secret", 1), "data:", "stringData:", 1)),
			live: live(strings.Replace(labelled, "kind: ConfigMap", "kind: Secret", 1), strings.Replace(settingsByGitsync, "f:data:", "f:stringData:", 1)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Untouched(tc.desired, tc.live, owner); got != tc.want {
				t.Errorf("Untouched = %v, want %v", got, tc.want)
			}
			// The watch cache's copy (compact) tells the same.
			cached, err := (&Watches{}).compact(tc.live)
			if err != nil {
				t.Fatal(err)
			}
			if got := Untouched(tc.desired, cached.(*Meta), owner); got != tc.want {
				t.Errorf("Untouched of the cached copy = %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkUntouched is the check a restart makes of every managed object against the
// watch cache (go test -bench Untouched -benchmem ./internal/drift/).
func BenchmarkUntouched(b *testing.B) {
	owner := types.NamespacedName{Namespace: "gitsync-system", Name: "demo"}
	desired := object(b, settingsInGit)
	desired.SetLabels(map[string]string{"gitsync.dev/application": "demo", "gitsync.dev/application-namespace": "gitsync-system"})
	u := object(b, settingsInGit, settingsByGitsync)
	live := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: u.GetName(), Namespace: u.GetNamespace(), Labels: desired.GetLabels(), ManagedFields: u.GetManagedFields(),
	}}
	if !Untouched(desired, live, owner) {
		b.Fatal("not untouched")
	}
	b.ReportAllocs()
	for b.Loop() {
		Untouched(desired, live, owner)
	}
}

// appliedLeaves records what Apply records: the leaves, without the identity fields,
// and no set for a map none of whose fields are recorded.
func TestAppliedLeaves(t *testing.T) {
	for _, tc := range []struct {
		manifest string
		want     []fieldpath.Path
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\ndata: {one: \"1\", two: {}}\n",
			[]fieldpath.Path{fieldpath.MakePathOrDie("data", "one"), fieldpath.MakePathOrDie("data", "two")}},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {l: v}}\n",
			[]fieldpath.Path{fieldpath.MakePathOrDie("metadata", "labels", "l")}},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
			[]fieldpath.Path{fieldpath.MakePathOrDie("metadata")}},
	} {
		got, ok := appliedLeaves(object(t, tc.manifest))
		if want := fieldpath.NewSet(tc.want...); !ok || !got.Equals(want) {
			t.Errorf("%q: leaves %v (%v), want %v", tc.manifest, got, ok, want)
		}
	}
	if _, ok := appliedLeaves(object(t, "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n")); ok {
		t.Error("a list's fields were recorded without its schema")
	}
}
