package impersonate

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// An Application applies as its spec.serviceAccountName, else as the default service
// account of its namespace (--default-service-account), else as the operator.
func TestIdentity(t *testing.T) {
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}}
	for _, c := range []struct{ sa, defaultSA, want string }{
		{"", "", OperatorIdentity},
		{"", "gitsync-tenant", "system:serviceaccount:team:gitsync-tenant"},
		{"deployer", "gitsync-tenant", "system:serviceaccount:team:deployer"},
	} {
		app.Spec.ServiceAccountName = c.sa
		if got := Identity(app, c.defaultSA); got != c.want {
			t.Errorf("Identity(sa=%q, default=%q) = %q, want %q", c.sa, c.defaultSA, got, c.want)
		}
	}
}

// The impersonating clients are bounded: a tenant who creates service account after
// service account (one Application each) keeps at most MaxClients clients in the
// operator; the recently used stay and are reused, an evicted one is made again.
func TestImpersonatingClientsAreBounded(t *testing.T) {
	made := map[string]int{}
	c := newClientCache(4, func(user string) (client.Client, error) {
		made[user]++
		return fakeFreeClient{user: user}, nil
	})
	for i := range 100 {
		if _, err := c.get(fmt.Sprintf("system:serviceaccount:team:sa-%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.get("system:serviceaccount:team:busy"); err != nil { // used all along
			t.Fatal(err)
		}
	}
	if n := c.cache.Len(); n != 4 {
		t.Fatalf("%d clients kept, want 4", n)
	}
	if made["system:serviceaccount:team:busy"] != 1 {
		t.Fatalf("the busy account's client was made %d times, want once", made["system:serviceaccount:team:busy"])
	}
	if _, err := c.get("system:serviceaccount:team:sa-0"); err != nil {
		t.Fatal(err)
	}
	if made["system:serviceaccount:team:sa-0"] != 2 {
		t.Fatalf("an evicted account's client was made %d times, want twice", made["system:serviceaccount:team:sa-0"])
	}
}

// fakeFreeClient stands for a client: the cache only stores and returns it.
type fakeFreeClient struct {
	client.Client
	user string
}

// BenchmarkClientCacheHit is the common path: the client of a service account already
// made (every sync and drift check of an Application asks for it).
func BenchmarkClientCacheHit(b *testing.B) {
	c := newClientCache(0, func(user string) (client.Client, error) { return fakeFreeClient{user: user}, nil })
	for i := range 100 {
		_, _ = c.get(fmt.Sprintf("system:serviceaccount:team-%d:gitsync-tenant", i))
	}
	user := "system:serviceaccount:team-42:gitsync-tenant"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.get(user); err != nil {
			b.Fatal(err)
		}
	}
}
