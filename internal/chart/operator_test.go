package chart

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// The operator starts from what the chart renders: `gitsync run` with the Deployment's
// own arguments, authenticated as the chart's service account (a token of it), so with
// the chart's RBAC only. It becomes ready, takes the leader lease and syncs a tenant
// namespace's Application as that namespace's gitsync-tenant (tenant mode, the default):
// at the defaults, and with the least-privilege role, under which the operator itself
// may not create the ConfigMap it syncs.
func TestOperatorRunsFromChart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the operator")
	}
	binary, err := gitsyncproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := gittest.NewServer(t, gittest.Options{})
	repo := git.CreateRepo("tenant")
	repo.Commit("main", "a ConfigMap", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\ndata:\n  a: b\n",
	})
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"least-privilege", map[string]any{"rbac": map[string]any{"leastPrivilege": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.Namespace(t)
			objs := renderForCluster(t, ns, tc.values)
			apply(t, objs)

			if tc.name == "least-privilege" {
				g.Expect(canCreateConfigMap(t, ns)).To(BeFalse(), "the operator's own identity may not write workloads")
			}
			port := freePort(t)
			dir := t.TempDir()
			log := filepath.Join(dir, "gitsync.log")
			gitsyncproc.Start(t, gitsyncproc.Options{
				Binary: binary, Kubeconfig: serviceAccountKubeconfig(t, ns, "gitsync", dir),
				StoragePath: filepath.Join(dir, "data"), Log: log,
				Args: append(chartArgs(t, objs), "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
					"--leader-election-namespace", ns),
			})
			defer func() {
				if t.Failed() {
					t.Logf("operator log:\n%s", gitsyncproc.Tail(log, 40))
				}
			}()
			g.Eventually(func() int {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
				if err != nil {
					return 0
				}
				resp.Body.Close()
				return resp.StatusCode
			}, 2*time.Minute, 250*time.Millisecond).Should(Equal(http.StatusOK))
			g.Eventually(func(g Gomega) {
				leases := &coordinationv1.LeaseList{}
				g.Expect(env.Client.List(ctx, leases, client.InNamespace(ns))).To(Succeed())
				g.Expect(leases.Items).To(ContainElement(HaveField("Spec.HolderIdentity", Not(BeNil()))))
			}, time.Minute, 250*time.Millisecond).Should(Succeed())

			// A tenant namespace, as its admin would set it up (config/tenant), and its Application.
			tenant := env.Namespace(t)
			for _, o := range kustomize(t, "tenant") {
				o.SetNamespace(tenant)
				if o.GetKind() == "RoleBinding" {
					subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
					subjects[0].(map[string]any)["namespace"] = tenant
					g.Expect(unstructured.SetNestedSlice(o.Object, subjects, "subjects")).To(Succeed())
				}
				g.Expect(env.Client.Create(ctx, o)).To(Succeed())
			}
			g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tenant},
				Spec: gitsyncv1.GitRepositorySpec{URL: git.HTTPURL("tenant"),
					Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
			})).To(Succeed())
			g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
				ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tenant},
				Spec:       gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: "GitRepository", Name: "tenant"}},
			})).To(Succeed())
			g.Eventually(func(g Gomega) {
				cm := &corev1.ConfigMap{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "from-git"}, cm)).To(Succeed())
				g.Expect(cm.Labels).To(HaveKeyWithValue("gitsync.dev/application", "tenant"))
				g.Expect(cm.ManagedFields).To(ContainElement(HaveField("Manager", "gitsync")))
			}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
			// Nothing the operator did as itself was refused (watches, status, events, leases).
			data, err := os.ReadFile(log)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).NotTo(ContainSubstring(`system:serviceaccount:` + ns + `:gitsync\" cannot`))
			g.Expect(string(data)).NotTo(ContainSubstring(`system:serviceaccount:` + ns + `:gitsync" cannot`))
		})
	}
}

// chartArgs are the rendered Deployment's `gitsync run` flags but those gitsyncproc sets
// for a process on a shared machine (storage, the metrics and webhook listeners).
func chartArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		var args []string
		for i, a := range containers[0].(map[string]any)["args"].([]any) {
			a := a.(string)
			if i == 0 && a == "run" {
				continue
			}
			if strings.HasPrefix(a, "--storage-path=") || strings.HasPrefix(a, "--metrics-bind-address=") ||
				strings.HasPrefix(a, "--health-probe-bind-address=") {
				continue
			}
			args = append(args, a)
		}
		return args
	}
	t.Fatal("the chart rendered no Deployment")
	return nil
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the service account
// with a token the API server issued.
func serviceAccountKubeconfig(t *testing.T, ns, name, dir string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "envtest"
	p := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// canCreateConfigMap asks the API server whether the chart's service account of ns may
// create a ConfigMap in another namespace itself.
func canCreateConfigMap(t *testing.T, ns string) bool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":gitsync",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "elsewhere", Verb: "create", Resource: "configmaps",
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
