package apply

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// newManager returns an admin Manager for owner that polls quickly.
func newManager(owner Owner) *Manager {
	m := New(env.Client, env.Client, owner)
	m.pollInterval = 200 * time.Millisecond
	return m
}

// parse reads one object from YAML, formatted with args.
func parse(t *testing.T, format string, args ...any) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(fmt.Appendf(nil, format, args...), &obj.Object); err != nil {
		t.Fatalf("parsing test object: %v", err)
	}
	return obj
}

func configMap(t *testing.T, ns, name, value string) *unstructured.Unstructured {
	return parse(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: %s}
data: {key: %q}
`, name, ns, value)
}

func deployment(t *testing.T, ns, name string) *unstructured.Unstructured {
	return parse(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: example.com/app:1}]
`, name, ns)
}

// crd returns a namespaced CRD of kind Widget in a random group, whose spec.size is an integer.
func crd(t *testing.T) (obj *unstructured.Unstructured, group string) {
	group = "t" + rand.String(8) + ".gitsync.test"
	return parse(t, "%s", manifests.WidgetCRD(group)), group
}

// current reads obj's current state from the API server.
func current(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("reading %s/%s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return got
}

// exists says whether obj exists in the API server.
func exists(t *testing.T, obj *unstructured.Unstructured) bool {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading %s/%s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return err == nil
}
