package drift

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stringDataSecret is a Secret that Git writes with stringData, as kube-apiserver
// returns it: stringData merged into data and not stored. %s is data.password.
const stringDataSecret = `
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: demo
  labels:
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
type: Opaque
data:
  password: %s
  username: YXBw
`

// stringDataByGitsync is gitsync's Apply entry: the fields it applied, stringData's.
const stringDataByGitsync = `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
    f:stringData:
      f:password: {}
      f:username: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`

// dataPasswordBy is an Update of data.password by manager.
func dataPasswordBy(manager string) string {
	return fmt.Sprintf(`
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:password: {}
  manager: %s
  operation: Update
  time: "2025-03-01T11:00:00Z"
`, manager)
}

func TestDiffSecretWrittenWithStringData(t *testing.T) {
	const gitValue, gitPlain = "czNjcjN0LWZyMG0tZzF0", "s3cr3t-fr0m-g1t"
	const liveValue, livePlain = "aDR4MHItdmFsdWU=", "h4x0r-value"
	desired := object(t, fmt.Sprintf(stringDataSecret, gitValue), stringDataByGitsync)
	edited := object(t, fmt.Sprintf(stringDataSecret, liveValue), stringDataByGitsync, dataPasswordBy("kubectl-edit"))
	// Another client writing stringData.password: it owns stringData, the API server
	// changes data.
	rotatorEntry := strings.Replace(strings.Replace(dataPasswordBy("rotator"), "f:data:", "f:stringData:", 1), "operation: Update", "operation: Apply", 1)

	cases := []struct {
		name   string
		live   *unstructured.Unstructured
		ignore []string
		want   []Field
	}{
		{name: "in sync", live: object(t, fmt.Sprintf(stringDataSecret, gitValue), stringDataByGitsync)},
		{
			name: "kubectl edit of data is drift of /data/password",
			live: edited,
			want: []Field{{Path: "/data/password", Managers: []string{"kubectl-edit"}}},
		},
		{
			name: "a key removed",
			live: edit(object(t, fmt.Sprintf(stringDataSecret, gitValue), stringDataByGitsync), func(o map[string]any) {
				unstructured.RemoveNestedField(o, "data", "username")
			}),
			want: []Field{{Path: "/data/username"}},
		},
		{
			name: "written through stringData by another manager",
			live: object(t, fmt.Sprintf(stringDataSecret, liveValue), stringDataByGitsync, rotatorEntry),
			want: []Field{{Path: "/data/password", Managers: []string{"rotator"}}},
		},
		{name: "ignored as /data/password", live: edited, ignore: []string{"/data/password"}},
		{name: "ignored as /stringData/password", live: edited, ignore: []string{"/stringData/password"}},
		{name: "ignored as /stringData", live: edited, ignore: []string{"/stringData"}},
		{
			name:   "an ignore rule of another key changes nothing",
			live:   edited,
			ignore: []string{"/stringData/username"},
			want:   []Field{{Path: "/data/password", Managers: []string{"kubectl-edit"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Diff(tc.live, desired, tc.ignore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(withoutHashes(got)).To(Equal(tc.want))
			for _, format := range []string{"%v", "%+v", "%#v"} {
				out := fmt.Sprintf(format, got)
				for _, v := range []string{gitValue, gitPlain, liveValue, livePlain} {
					g.Expect(out).NotTo(ContainSubstring(v), "format %s", format)
				}
			}
		})
	}
}

// Only a core Secret stores stringData as data: another kind's stringData field is
// compared as itself.
func TestDiffStringDataOfOtherKinds(t *testing.T) {
	g := NewWithT(t)
	const custom = `
apiVersion: example.com/v1
kind: Secret
metadata:
  name: db
  namespace: demo
  labels:
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
stringData:
  password: %s
`
	byGitsync := strings.ReplaceAll(stringDataByGitsync, "apiVersion: v1", "apiVersion: example.com/v1")
	byGitsync = strings.Replace(byGitsync, "      f:username: {}\n", "", 1)
	desired := object(t, fmt.Sprintf(custom, "from-git"), byGitsync)
	live := object(t, fmt.Sprintf(custom, "by-hand"), byGitsync)
	got, err := Diff(live, desired, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withoutHashes(got)).To(Equal([]Field{{Path: "/stringData/password"}}))
}
