package image_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/operatortest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

// TestMain runs the whole operator (all controllers, the image ones among them) on one
// API server for the package.
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.Run(m, &env, func() (func(), error) {
		dir, err := os.MkdirTemp("", "gitsync-image-")
		if err != nil {
			return nil, err
		}
		return operatortest.Start(env, dir)
	}))
}

const (
	poll = 200 * time.Millisecond
	wait = 60 * time.Second
)

func ready(g Gomega, obj client.Object, conds func() []metav1.Condition) metav1.Condition {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	for _, c := range conds() {
		if c.Type == gitsyncv1.ReadyCondition {
			return c
		}
	}
	return metav1.Condition{}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// request sets requested-at on obj (what `gitsync reconcile image repository` does).
func request(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	base := obj.DeepCopyObject().(client.Object)
	gitsyncv1.RequestReconcile(obj, time.Now())
	if err := env.Client.Patch(context.Background(), obj, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}
