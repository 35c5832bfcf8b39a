package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// register stores the test API server's admin kubeconfig in a Secret and returns a
// Cluster naming it (not created: the cache reads only the Secret).
func register(t *testing.T, ns string) *gitsyncv1.Cluster {
	t.Helper()
	kc, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: ns}, Data: map[string][]byte{"value": kc}}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "self", Namespace: ns, Generation: 1},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: "kc"}}}}
}

func TestClientsCacheAndProbe(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	cl := register(t, ns)
	c := &Clients{Reader: env.Client, Scheme: env.Scheme}

	first, err := c.Get(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	version, err := Probe(ctx, first)
	if err != nil || !strings.HasPrefix(version, "v") {
		t.Fatalf("probe: %q, %v", version, err)
	}
	if again, _ := c.Get(ctx, cl); again != first {
		t.Fatal("same generation: a new Target")
	}
	if again, _ := c.Refresh(ctx, cl); again != first {
		t.Fatal("same Secret version: a new Target")
	}

	// A change of the Secret gives a new Target at the next Refresh.
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kc"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Labels = map[string]string{"rotated": "yes"}
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	second, err := c.Refresh(ctx, cl)
	if err != nil || second == first {
		t.Fatalf("Secret changed: same Target (%v)", err)
	}
	// A new generation gives a new Target.
	cl.Generation = 2
	third, err := c.Get(ctx, cl)
	if err != nil || third == second {
		t.Fatalf("generation changed: same Target (%v)", err)
	}
	// The clients reach the API server, as the kubeconfig's user and impersonating.
	admin, err := third.Client("")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	nobody, err := third.Client("system:serviceaccount:" + ns + ":nobody")
	if err != nil {
		t.Fatal(err)
	}
	if err := nobody.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err == nil {
		t.Fatal("an impersonated service account without rights read a Namespace")
	}
	c.Drop(client.ObjectKeyFromObject(cl))
	if c.Len() != 0 {
		t.Fatalf("after Drop: %d Targets", c.Len())
	}
}

func TestClientsRefuseAMissingSecretOrKey(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	cl := register(t, ns)
	c := &Clients{Reader: env.Client, Scheme: env.Scheme}
	cl.Spec.KubeConfig.SecretRef.Key = "other"
	_, err := c.Get(ctx, cl)
	var kcErr *KubeConfigError
	if !errors.As(err, &kcErr) || !strings.Contains(err.Error(), `has no key "other"`) {
		t.Fatalf("err = %v", err)
	}
	cl.Spec.KubeConfig.SecretRef = gitsyncv1.SecretKeyReference{Name: "absent"}
	if _, err := c.Get(ctx, cl); !errors.As(err, &kcErr) {
		t.Fatalf("err = %v", err)
	}
}

func TestProbeUnreachable(t *testing.T) {
	ctx := context.Background()
	c := &Clients{Reader: env.Client, Scheme: env.Scheme}
	// Nothing listens on port 1.
	tgt, err := c.newTarget(client.ObjectKey{Namespace: "x", Name: "y"}, &gitsyncv1.Cluster{},
		kubeconfig("https://127.0.0.1:1", "    token: t"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Probe(ctx, tgt)
	if err == nil || !Unreachable(err) {
		t.Fatalf("err = %v, Unreachable %v", err, Unreachable(err))
	}
}
