// Package testenv gives each test package one real API server (see internal/localcluster)
// and each test a namespace of its own, so tests need no teardown and can run in parallel.
package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/localcluster"
)

// Env is the API server of a test package.
type Env struct {
	*localcluster.Cluster
	// Client is an uncached admin client.
	Client client.Client
}

// Run starts the API server, sets *env, calls setup (when not nil; e.g. to start a
// manager, returning its stop function), runs the package's tests and stops it all.
// Call it from TestMain as os.Exit(testenv.Run(m, &env, setup)).
func Run(m *testing.M, env **Env, setup func() (stop func(), err error)) int {
	return RunWith(m, env, localcluster.Options{}, setup)
}

// RunWith is Run with the API server started with opts (e.g. an earlier release's CRDs,
// an audit log).
func RunWith(m *testing.M, env **Env, opts localcluster.Options, setup func() (stop func(), err error)) int {
	c, err := localcluster.StartWith(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()
	cl, err := client.New(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = &Env{Cluster: c, Client: cl}
	if setup != nil {
		stop, err := setup()
		if err != nil {
			fmt.Fprintln(os.Stderr, "test setup:", err)
			return 1
		}
		defer stop()
	}
	return m.Run()
}

// Namespace creates a namespace with a random name for the test.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test-" + rand.String(8)}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// Metadata returns a metadata-only client of the API server (what drift.NewWatches reads
// with).
func (e *Env) Metadata(t testing.TB) metadata.Interface {
	t.Helper()
	mc, err := metadata.NewForConfig(e.Config)
	if err != nil {
		t.Fatalf("creating a metadata client: %v", err)
	}
	return mc
}

// Resource returns the resource that serves a kind, from the API server's discovery.
func (e *Env) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}
