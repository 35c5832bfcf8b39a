package render

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// The cluster's view tells scopes from the mapper, asks for its client once, and reads
// the decryption Secret only when asked to.
func TestClusterOf(t *testing.T) {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "example.com", Version: "v1"}})
	ns := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	cl := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Dial"}
	m.Add(ns, meta.RESTScopeNamespace)
	m.Add(cl, meta.RESTScopeRoot)

	calls := 0
	denied := errors.New("no client")
	reader := func() (client.Client, error) { calls++; return nil, denied }
	c := ClusterOf("team", m, reader, false)
	if got, err := c.IsNamespaced(ns.GroupKind()); err != nil || !got {
		t.Errorf("Widget namespaced = %v, %v; want true", got, err)
	}
	if got, err := c.IsNamespaced(cl.GroupKind()); err != nil || got {
		t.Errorf("Dial namespaced = %v, %v; want false", got, err)
	}
	if _, err := c.IsNamespaced(schema.GroupKind{Group: "example.com", Kind: "Unknown"}); err == nil {
		t.Error("an unknown kind: want the mapper's error")
	}
	ctx := context.Background()
	if _, err := c.Values(ctx, gitsyncv1.ValuesReference{Kind: "ConfigMap", Name: "v"}); !errors.Is(err, denied) {
		t.Errorf("Values: err = %v, want the reader's", err)
	}
	if _, err := c.Variables(ctx, gitsyncv1.SubstituteReference{Kind: "ConfigMap", Name: "v"}); !errors.Is(err, denied) {
		t.Errorf("Variables: err = %v, want the reader's", err)
	}
	if calls != 1 {
		t.Errorf("reader called %d times, want once", calls)
	}
	if c.Keys != nil {
		t.Error("Keys without keys: want none (encrypted content is left encrypted or fails)")
	}
	if ClusterOf("team", m, reader, true).Keys == nil {
		t.Error("Keys with keys: want the decryption Secret's reader")
	}
}
