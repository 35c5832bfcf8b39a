package drift

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
	"sigs.k8s.io/yaml"
)

// The fixtures below are what kube-apiserver returns: desired is the server-side
// dry-run apply (field manager gitsync) of Git's version, live is the object after
// someone else's write, with the managedFields the API server recorded for that write.

// deployment is the Deployment of the demo, as applied by gitsync and reconciled by
// kube-controller-manager. Git does not set spec.replicas (an HPA scales it).
const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  uid: 6f1c2a4e-5b7d-4c1e-9a39-2f1d1f0c0a01
  resourceVersion: "1042"
  generation: 2
  creationTimestamp: "2025-03-01T10:00:00Z"
  labels:
    app: web
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
  annotations:
    deployment.kubernetes.io/revision: "1"
spec:
  progressDeadlineSeconds: 600
  replicas: 2
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: web
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 25%
    type: RollingUpdate
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: ghcr.io/example/web:1.4.2
        args: ["--listen=:8080"]
        imagePullPolicy: IfNotPresent
        ports:
        - containerPort: 8080
          name: http
          protocol: TCP
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      - name: proxy
        image: ghcr.io/example/proxy:2.0.0
        imagePullPolicy: IfNotPresent
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
status:
  availableReplicas: 2
  observedGeneration: 2
  readyReplicas: 2
  replicas: 2
  updatedReplicas: 2
`

// deploymentByGitsync is gitsync's Apply entry: the fields Git sets.
const deploymentByGitsync = `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:metadata:
      f:labels:
        f:app: {}
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
    f:spec:
      f:selector: {}
      f:template:
        f:metadata:
          f:labels:
            f:app: {}
        f:spec:
          f:containers:
            'k:{"name":"proxy"}':
              .: {}
              f:image: {}
              f:name: {}
            'k:{"name":"web"}':
              .: {}
              f:args: {}
              f:image: {}
              f:name: {}
              f:ports:
                'k:{"containerPort":8080,"protocol":"TCP"}':
                  .: {}
                  f:containerPort: {}
                  f:name: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`

// deploymentStatusByKCM is the status write of the deployment controller.
const deploymentStatusByKCM = `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:metadata:
      f:annotations:
        .: {}
        f:deployment.kubernetes.io/revision: {}
    f:status:
      f:availableReplicas: {}
      f:conditions:
        .: {}
        'k:{"type":"Available"}':
          .: {}
          f:status: {}
          f:type: {}
      f:observedGeneration: {}
      f:readyReplicas: {}
      f:replicas: {}
      f:updatedReplicas: {}
  manager: kube-controller-manager
  operation: Update
  subresource: status
  time: "2025-03-01T10:00:05Z"
`

// deploymentImageBySet is what "kubectl set image deployment/web web=...:1.5.0-debug"
// records: an Update of manager kubectl-set owning the image.
const deploymentImageBySet = `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:template:
        f:spec:
          f:containers:
            'k:{"name":"web"}':
              f:image: {}
  manager: kubectl-set
  operation: Update
  time: "2025-03-01T11:00:00Z"
`

// deploymentReplicasByHPA is the HPA's write of spec.replicas, through the scale
// subresource, from kube-controller-manager.
const deploymentReplicasByHPA = `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:replicas: {}
  manager: kube-controller-manager
  operation: Update
  subresource: scale
  time: "2025-03-01T11:00:00Z"
`

// configMap is a ConfigMap applied by gitsync.
const configMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
  uid: 0b6f7a52-8a3e-4bb4-9d7c-7d2b8e0d6c11
  resourceVersion: "2077"
  creationTimestamp: "2025-03-01T10:00:00Z"
  labels:
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
  annotations:
    example.com/owner: team-a
  finalizers:
  - example.com/cleanup
data:
  LOG_LEVEL: info
  FEATURES: "a,b"
`

const configMapByGitsync = `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:FEATURES: {}
      f:LOG_LEVEL: {}
    f:metadata:
      f:annotations:
        f:example.com/owner: {}
      f:finalizers:
        v:"example.com/cleanup": {}
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`

// configMapByGitsyncWithoutLevel is gitsync's entry once kubectl-edit took LOG_LEVEL.
var configMapByGitsyncWithoutLevel = strings.Replace(configMapByGitsync, "      f:LOG_LEVEL: {}\n", "", 1)

// configMapLevelByEdit is what "kubectl edit configmap settings" records when the
// user changes LOG_LEVEL.
const configMapLevelByEdit = `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:LOG_LEVEL: {}
  manager: kubectl-edit
  operation: Update
  time: "2025-03-01T11:00:00Z"
`

// object decodes a YAML manifest the way client-go decodes the API server's JSON, and
// sets its managedFields from YAML lists of entries.
func object(t testing.TB, manifest string, managedFields ...string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, j)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	u := obj.(*unstructured.Unstructured)
	if len(managedFields) > 0 {
		var entries []any
		for _, mf := range managedFields {
			var list []any
			if err := yaml.Unmarshal([]byte(mf), &list); err != nil {
				t.Fatalf("managedFields: %v", err)
			}
			entries = append(entries, list...)
		}
		if err := unstructured.SetNestedSlice(u.Object, entries, "metadata", "managedFields"); err != nil {
			t.Fatal(err)
		}
		if len(u.GetManagedFields()) != len(entries) {
			t.Fatalf("managedFields do not decode: %v", entries)
		}
	}
	return u
}

// edit returns a copy of obj changed by fn.
func edit(obj *unstructured.Unstructured, fn func(o map[string]any)) *unstructured.Unstructured {
	c := obj.DeepCopy()
	fn(c.Object)
	return c
}

func containerNamed(o map[string]any, name string) map[string]any {
	list, _, _ := unstructured.NestedFieldNoCopy(o, "spec", "template", "spec", "containers")
	for _, c := range list.([]any) {
		if c.(map[string]any)["name"] == name {
			return c.(map[string]any)
		}
	}
	panic("no container " + name)
}

func set(o map[string]any, v any, path ...string) {
	if err := unstructured.SetNestedField(o, v, path...); err != nil {
		panic(err)
	}
}

func TestDiffDeployment(t *testing.T) {
	desired := object(t, deployment, deploymentByGitsync, deploymentStatusByKCM)
	// Live objects keep desired's values and managedFields unless a case changes them.
	inSync := object(t, deployment, deploymentByGitsync, deploymentStatusByKCM)
	imageSet := object(t, deployment,
		strings.Replace(deploymentByGitsync, "              f:image: {}\n              f:name: {}\n              f:ports:", "              f:name: {}\n              f:ports:", 1),
		deploymentStatusByKCM, deploymentImageBySet)
	imageSet = edit(imageSet, func(o map[string]any) {
		containerNamed(o, "web")["image"] = "ghcr.io/example/web:1.5.0-debug"
	})
	if strings.Count(string(imageSet.GetManagedFields()[0].FieldsV1.Raw), "f:image") != 1 {
		t.Fatal("fixture: gitsync should have lost the web image")
	}

	cases := []struct {
		name    string
		live    *unstructured.Unstructured
		desired *unstructured.Unstructured
		ignore  []string
		want    []Field
	}{
		{
			name: "in sync",
			live: inSync,
			want: nil,
		},
		{
			name: "kubectl set image is drift, written by kubectl-set",
			live: imageSet,
			want: []Field{{Path: "/spec/template/spec/containers/name=web/image", Managers: []string{"kubectl-set"}}},
		},
		{
			name: "containers reordered, same values: not drift",
			live: edit(inSync, func(o map[string]any) {
				list, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
				list[0], list[1] = list[1], list[0]
				set(o, list, "spec", "template", "spec", "containers")
			}),
			want: nil,
		},
		{
			name: "replicas scaled by the HPA, which Git does not set: not drift",
			live: edit(object(t, deployment, deploymentByGitsync, deploymentStatusByKCM, deploymentReplicasByHPA), func(o map[string]any) {
				set(o, int64(5), "spec", "replicas")
			}),
			want: nil,
		},
		{
			name: "status changed: not drift",
			live: edit(inSync, func(o map[string]any) {
				set(o, int64(1), "status", "readyReplicas")
				set(o, int64(1), "status", "unavailableReplicas")
				set(o, "1043", "metadata", "resourceVersion")
			}),
			want: nil,
		},
		{
			name: "a field Git does not set, changed by someone: not drift",
			live: edit(object(t, deployment, deploymentByGitsync, deploymentStatusByKCM, `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:template:
        f:spec:
          f:containers:
            'k:{"name":"web"}':
              f:imagePullPolicy: {}
  manager: kubectl-edit
  operation: Update
  time: "2025-03-01T11:00:00Z"
`), func(o map[string]any) {
				containerNamed(o, "web")["imagePullPolicy"] = "Always"
			}),
			want: nil,
		},
		{
			name:   "ignored by index pointer",
			live:   imageSet,
			ignore: []string{"/spec/template/spec/containers/0/image"},
			want:   nil,
		},
		{
			name:   "ignored by key pointer",
			live:   imageSet,
			ignore: []string{"/spec/template/spec/containers/name=web/image"},
			want:   nil,
		},
		{
			name:   "ignored by an ancestor",
			live:   imageSet,
			ignore: []string{"/spec/template"},
			want:   nil,
		},
		{
			name:   "an ignore pointer elsewhere changes nothing",
			live:   imageSet,
			ignore: []string{"/spec/template/spec/containers/0/args", "/spec/template/spec/containers/1/image", "/spec/replicas", "/spec/template/spec/containers/name=web/imag"},
			want:   []Field{{Path: "/spec/template/spec/containers/name=web/image", Managers: []string{"kubectl-set"}}},
		},
		{
			name: "owner labels stripped: drift, nobody owns the removal",
			live: edit(object(t, deployment,
				strings.Replace(deploymentByGitsync, "        f:gitsync.dev/application: {}\n        f:gitsync.dev/application-namespace: {}\n", "", 1),
				deploymentStatusByKCM), func(o map[string]any) {
				set(o, map[string]any{"app": "web"}, "metadata", "labels")
			}),
			// Owner labels are not subject to ignore rules.
			ignore: []string{"/metadata/labels"},
			want: []Field{
				{Path: "/metadata/labels/gitsync.dev~1application"},
				{Path: "/metadata/labels/gitsync.dev~1application-namespace"},
			},
		},
		{
			name: "owner label changed by kubectl label --overwrite",
			live: edit(object(t, deployment,
				strings.Replace(deploymentByGitsync, "        f:gitsync.dev/application: {}\n", "", 1),
				deploymentStatusByKCM, `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
  manager: kubectl-label
  operation: Update
  time: "2025-03-01T11:00:00Z"
`), func(o map[string]any) {
				set(o, "other", "metadata", "labels", "gitsync.dev/application")
			}),
			want: []Field{{Path: "/metadata/labels/gitsync.dev~1application", Managers: []string{"kubectl-label"}}},
		},
		{
			name: "atomic args and a keyed port edited with kubectl edit",
			live: edit(object(t, deployment, deploymentByGitsync, deploymentStatusByKCM, `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:spec:
      f:template:
        f:spec:
          f:containers:
            'k:{"name":"web"}':
              f:args: {}
              f:ports:
                'k:{"containerPort":8080,"protocol":"TCP"}':
                  f:name: {}
  manager: kubectl-edit
  operation: Update
  time: "2025-03-01T11:00:00Z"
`), func(o map[string]any) {
				web := containerNamed(o, "web")
				web["args"] = []any{"--listen=:9090", "--debug"}
				web["ports"].([]any)[0].(map[string]any)["name"] = "web"
			}),
			want: []Field{
				{Path: "/spec/template/spec/containers/name=web/args", Managers: []string{"kubectl-edit"}},
				{Path: "/spec/template/spec/containers/name=web/ports/containerPort=8080,protocol=TCP/name", Managers: []string{"kubectl-edit"}},
			},
		},
		{
			name: "a container removed: each of its fields, nobody owns them",
			live: edit(inSync, func(o map[string]any) {
				set(o, []any{containerNamed(o, "web")}, "spec", "template", "spec", "containers")
			}),
			want: []Field{
				{Path: "/spec/template/spec/containers/name=proxy/image"},
				{Path: "/spec/template/spec/containers/name=proxy/name"},
			},
		},
		{
			name: "status, managedFields and last-applied are never drift, even when gitsync's entry names them",
			desired: edit(object(t, deployment, `
- apiVersion: apps/v1
  fieldsType: FieldsV1
  fieldsV1:
    f:metadata:
      f:annotations:
        f:kubectl.kubernetes.io/last-applied-configuration: {}
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
    f:status:
      f:replicas: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`), func(o map[string]any) {
				set(o, `{"kind":"Deployment"}`, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
			}),
			live: edit(inSync, func(o map[string]any) {
				set(o, `{"kind":"Deployment","spec":{}}`, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
				set(o, int64(7), "status", "replicas")
			}),
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := desired
			if tc.desired != nil {
				d = tc.desired
			}
			got, err := Diff(tc.live, d, tc.ignore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(withoutHashes(got)).To(Equal(tc.want))
		})
	}
}

func TestDiffConfigMapAndSecret(t *testing.T) {
	desired := object(t, configMap, configMapByGitsync)
	levelEdited := edit(object(t, configMap, configMapByGitsyncWithoutLevel, configMapLevelByEdit), func(o map[string]any) {
		set(o, "debug", "data", "LOG_LEVEL")
	})

	cases := []struct {
		name    string
		live    *unstructured.Unstructured
		desired *unstructured.Unstructured
		ignore  []string
		want    []Field
	}{
		{
			name: "kubectl edit of a data key",
			live: levelEdited,
			want: []Field{{Path: "/data/LOG_LEVEL", Managers: []string{"kubectl-edit"}}},
		},
		{
			name:   "kubectl edit of an ignored data key",
			live:   levelEdited,
			ignore: []string{"/data/LOG_LEVEL"},
			want:   nil,
		},
		{
			name:   "ignoring all of data",
			live:   levelEdited,
			ignore: []string{"/data"},
			want:   nil,
		},
		{
			name: "a data key and an annotation removed, a finalizer dropped",
			live: edit(object(t, configMap, `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:LOG_LEVEL: {}
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`), func(o map[string]any) {
				unstructured.RemoveNestedField(o, "data", "FEATURES")
				unstructured.RemoveNestedField(o, "metadata", "annotations")
				unstructured.RemoveNestedField(o, "metadata", "finalizers")
			}),
			want: []Field{
				{Path: "/data/FEATURES"},
				{Path: "/metadata/annotations/example.com~1owner"},
				{Path: "/metadata/finalizers/example.com~1cleanup"},
			},
		},
		{
			name: "keys added by someone else to a map Git leaves empty: not drift",
			desired: object(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  namespace: demo
  labels:
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
data: {}
`, `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data: {}
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`),
			live: object(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  namespace: demo
  labels:
    gitsync.dev/application: demo
    gitsync.dev/application-namespace: gitsync-system
data:
  added: "1"
`, `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data: {}
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:added: {}
  manager: kubectl-edit
  operation: Update
  time: "2025-03-01T11:00:00Z"
`),
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := desired
			if tc.desired != nil {
				d = tc.desired
			}
			got, err := Diff(tc.live, d, tc.ignore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(withoutHashes(got)).To(Equal(tc.want))
		})
	}
}

func TestDiffSecretValuesNeverReturned(t *testing.T) {
	g := NewWithT(t)
	const secret = `
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
	byGitsync := `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:password: {}
      f:username: {}
    f:metadata:
      f:labels:
        f:gitsync.dev/application: {}
        f:gitsync.dev/application-namespace: {}
    f:type: {}
  manager: gitsync
  operation: Apply
  time: "2025-03-01T10:00:00Z"
`
	byEdit := `
- apiVersion: v1
  fieldsType: FieldsV1
  fieldsV1:
    f:data:
      f:password: {}
  manager: kubectl-edit
  operation: Update
  time: "2025-03-01T11:00:00Z"
`
	const gitValue, gitPlain = "czNjcjN0LWZyMG0tZzF0", "s3cr3t-fr0m-g1t"
	const liveValue, livePlain = "aDR4MHItdmFsdWU=", "h4x0r-value"
	desired := object(t, fmt.Sprintf(secret, gitValue), byGitsync)
	live := object(t, fmt.Sprintf(secret, liveValue), strings.Replace(byGitsync, "      f:password: {}\n", "", 1), byEdit)

	fields, err := Diff(live, desired, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withoutHashes(fields)).To(Equal([]Field{{Path: "/data/password", Managers: []string{"kubectl-edit"}}}))
	g.Expect(fields[0].ValueHash).To(HaveLen(16))
	for _, format := range []string{"%v", "%+v", "%#v"} {
		out := fmt.Sprintf(format, fields)
		for _, v := range []string{gitValue, gitPlain, liveValue, livePlain} {
			g.Expect(out).NotTo(ContainSubstring(v), "format %s", format)
		}
	}
}

func TestDiffErrors(t *testing.T) {
	live := object(t, configMap, configMapByGitsync)
	cases := []struct {
		name    string
		desired *unstructured.Unstructured
		ignore  []string
		want    string
	}{
		{
			name:    "desired is not an apply by gitsync",
			desired: object(t, configMap, strings.Replace(configMapByGitsync, "operation: Apply", "operation: Update", 1)),
			want:    `no managedFields entry of field manager "gitsync" with operation Apply`,
		},
		{
			name:    "desired without managedFields",
			desired: object(t, configMap),
			want:    `no managedFields entry`,
		},
		{
			name:    "ignore pointer without a leading slash",
			desired: object(t, configMap, configMapByGitsync),
			ignore:  []string{"data/LOG_LEVEL"},
			want:    `ignore rule "data/LOG_LEVEL": not a JSON pointer`,
		},
		{
			name:    "ignore pointer with a bad escape",
			desired: object(t, configMap, configMapByGitsync),
			ignore:  []string{"/metadata/annotations/example.com~2owner"},
			want:    `not a JSON pointer`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Diff(live, tc.desired, tc.ignore)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	_, err := Diff(nil, live, nil)
	NewWithT(t).Expect(err).To(HaveOccurred())
}

func TestDiffPathFormat(t *testing.T) {
	cases := []struct {
		path fieldpath.Path
		want string
	}{
		{fieldpath.MakePathOrDie("metadata", "labels", "gitsync.dev/application"), "/metadata/labels/gitsync.dev~1application"},
		{fieldpath.MakePathOrDie("data", "a~b"), "/data/a~0b"},
		{fieldpath.MakePathOrDie("spec", "containers", fieldpath.KeyByFields("name", "web"), "image"), "/spec/containers/name=web/image"},
		{fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP"), "name"), "/spec/ports/port=80,protocol=TCP/name"},
		{fieldpath.MakePathOrDie("spec", "items", fieldpath.KeyByFields("id", "80"), "x"), `/spec/items/id="80"/x`},
		{fieldpath.MakePathOrDie("spec", "items", fieldpath.KeyByFields("id", "a,b=c"), "x"), `/spec/items/id="a,b=c"/x`},
		{fieldpath.MakePathOrDie("spec", "items", fieldpath.KeyByFields("id", ""), "x"), `/spec/items/id=""/x`},
		{fieldpath.MakePathOrDie("spec", "items", fieldpath.KeyByFields("on", true), "x"), `/spec/items/on=true/x`},
		{fieldpath.MakePathOrDie("metadata", "finalizers", value.NewValueInterface("example.com/cleanup")), "/metadata/finalizers/example.com~1cleanup"},
		{fieldpath.MakePathOrDie("spec", "ids", value.NewValueInterface(int64(7))), "/spec/ids/7"},
		{fieldpath.MakePathOrDie("spec", "names", value.NewValueInterface("7")), `/spec/names/"7"`},
		{fieldpath.MakePathOrDie("spec", "args", 1), "/spec/args/1"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			NewWithT(t).Expect(joinPointer(formatPathTokens(tc.path))).To(Equal(tc.want))
		})
	}
}

// withoutHashes returns fields with ValueHash cleared, for comparing paths and managers;
// TestDiffValueHash tests the hashes themselves.
func withoutHashes(fields []Field) []Field {
	var out []Field
	for _, f := range fields {
		f.ValueHash = ""
		out = append(out, f)
	}
	return out
}

func TestDiffValueHash(t *testing.T) {
	g := NewWithT(t)
	desired := object(t, configMap, configMapByGitsync)
	liveWith := func(value string) *unstructured.Unstructured {
		return edit(object(t, configMap, configMapByGitsync), func(o map[string]any) {
			set(o, value, "data", "LOG_LEVEL")
		})
	}
	hashOf := func(live *unstructured.Unstructured) string {
		fields, err := Diff(live, desired, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fields).To(HaveLen(1))
		g.Expect(fields[0].Path).To(Equal("/data/LOG_LEVEL"))
		return fields[0].ValueHash
	}
	first := hashOf(liveWith("trace"))
	g.Expect(first).To(MatchRegexp("^[0-9a-f]{16}$"))
	// The same value written back hashes the same; another value does not.
	g.Expect(hashOf(liveWith("trace"))).To(Equal(first))
	g.Expect(hashOf(liveWith("warn"))).NotTo(Equal(first))
	g.Expect(hashOf(liveWith("Trace"))).NotTo(Equal(first))
	// A removed field has no value, so no hash.
	removed := edit(object(t, configMap, configMapByGitsync), func(o map[string]any) {
		unstructured.RemoveNestedField(o, "data", "LOG_LEVEL")
	})
	g.Expect(hashOf(removed)).To(BeEmpty())
	// Equal maps hash equal whatever their key order in memory (JSON sorts keys).
	a := valueHash(location{found: true, value: map[string]any{"x": int64(1), "y": "z"}})
	b := valueHash(location{found: true, value: map[string]any{"y": "z", "x": int64(1)}})
	g.Expect(a).To(Equal(b))
}
