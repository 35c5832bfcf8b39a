package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/config"
)

// operatorConfig returns a copy of the API server's config that authenticates as the
// installed operator does in a cluster: with a token of its ServiceAccount
// (gitsync-system/gitsync), whose rights are the install's RBAC (config/rbac), applied
// here as `kubectl apply -k config/default` would. The admin client certificate that
// envtest hands out would make the API server verify a certificate chain on every
// request (about 7 % of its CPU during a cold start); a token is checked once and then
// cached by the API server (10 s by default), as for an operator in a cluster.
func operatorConfig(b *testing.B) *rest.Config {
	b.Helper()
	token, err := operatorToken()
	if err != nil {
		b.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	return cfg
}

// operatorToken installs the operator's ServiceAccount and RBAC (config/full-privilege) and requests a token
// for it, once per benchmark process.
var operatorToken = sync.OnceValues(func() (string, error) {
	ctx := context.Background()
	// The full-privilege variant: the benchmarks' operators run without
	// --default-service-account and apply with their own identity, as before tenant mode
	// became the install's default.
	objs, err := config.InstallFullPrivilege()
	if err != nil {
		return "", err
	}
	// Namespaces first: kustomize's output keeps the order of config/default.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		rank := func(o *unstructured.Unstructured) int {
			if o.GetKind() == "Namespace" {
				return 0
			}
			return 1
		}
		return cmp.Compare(rank(a), rank(b))
	})
	var sa client.ObjectKey
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue // the CRDs are installed already; the Deployment would not run
		}
		if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("installing %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "ServiceAccount" {
			sa = client.ObjectKeyFromObject(o)
		}
	}
	if sa.Name == "" {
		return "", fmt.Errorf("the install has no ServiceAccount")
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace}}
	if err := env.Client.SubResource("token").Create(ctx, account, req); err != nil {
		return "", fmt.Errorf("requesting a token for %s: %w", sa, err)
	}
	return req.Status.Token, nil
})

// namespace creates a namespace for one benchmark and, when the benchmark ends, deletes
// the Applications and sources it holds, their finalizers removed first (envtest has no
// namespace controller, and the operator that would prune may be stopped by then). A
// later benchmark's operator watches every namespace: without this it would reconcile
// the leftovers, whose checkouts went with their benchmark's storage, and count their
// requests and writes as its own. Their objects (ConfigMaps...) stay; nothing writes them.
func namespace(b *testing.B) string {
	b.Helper()
	ns := env.Namespace(b)
	b.Cleanup(func() {
		ctx := context.Background()
		apps := &gitsyncv1.ApplicationList{}
		if err := env.Client.List(ctx, apps, client.InNamespace(ns)); err != nil {
			b.Errorf("listing the Applications of %s: %v", ns, err)
			return
		}
		for i := range apps.Items {
			app := &apps.Items[i]
			if len(app.Finalizers) > 0 {
				if err := env.Client.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
					b.Errorf("removing the finalizers of %s: %v", app.Name, err)
				}
			}
		}
		for _, list := range []client.Object{&gitsyncv1.Application{}, &gitsyncv1.GitRepository{}, &gitsyncv1.HelmRepository{}} {
			if err := env.Client.DeleteAllOf(ctx, list, client.InNamespace(ns)); err != nil {
				b.Errorf("deleting the %T objects of %s: %v", list, ns, err)
			}
		}
	})
	return ns
}
