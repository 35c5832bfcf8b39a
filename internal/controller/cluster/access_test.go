package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// In tenant mode a Cluster's kubeconfig Secret is read only when the namespace's tenant
// account may get it, as a source's Secret: before, whoever may create a Cluster in a
// namespace could have the operator use any kubeconfig Secret of it. Refused, the
// Cluster is Ready=False/AccessDenied and no client is kept; a RoleBinding lifts it.
func TestTenantModeChecksTheKubeConfigSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	kubeconfig, err := env.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "admin-kubeconfig", Namespace: ns},
		Data: map[string][]byte{gitsyncv1.DefaultKubeConfigKey: kubeconfig}})).To(Succeed())
	cl := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: ns},
		Spec: gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: "admin-kubeconfig"}}}}
	g.Expect(env.Client.Create(ctx, cl)).To(Succeed())

	const tenant = "gitsync-tenant"
	clients := &cluster.Clients{Reader: env.Client, Scheme: env.Scheme, SecretAccess: sources.NewSecretAccess(env.Client, tenant, true)}
	r := &Reconciler{Client: env.Client, Clients: clients, Interval: time.Minute}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "prod"}}
	ready := func(g Gomega) metav1.Condition {
		got := &gitsyncv1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, got)).To(Succeed())
		c := apimeta.FindStatusCondition(got.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		return *c
	}

	result, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(time.Minute))
	g.Expect(ready(g)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", gitsyncv1.AccessDeniedReason),
		HaveField("Message", And(ContainSubstring("Secret "+ns+"/admin-kubeconfig"), ContainSubstring("system:serviceaccount:"+ns+":"+tenant)))))
	g.Expect(clients.Len()).To(BeZero(), "a Target made from a Secret the tenant may not read")

	// The namespace's admin lets the tenant account get that Secret: the next probe reads it.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"admin-kubeconfig"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: tenant}}})).To(Succeed())
	g.Eventually(func(g Gomega) metav1.Condition {
		_, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		return ready(g)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", gitsyncv1.ClusterReachableReason)))
	g.Expect(clients.Len()).To(Equal(1))
}
