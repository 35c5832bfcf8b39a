package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// `gitsync run` in these tests starts its render workers from the running executable,
	// this test binary: it serves them as the gitsync binary would.
	if len(os.Args) > 1 && os.Args[1] == "render-worker" {
		cmd := newRenderWorkerCommand()
		cmd.SetArgs(os.Args[2:])
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testenv.Run(m, &env, nil))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// `gitsync run --kubeconfig F` reconciles, serves probes and metrics, and holds a lease.
func TestRunAgainstACluster(t *testing.T) {
	g := NewWithT(t)
	kubeconfig, err := env.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())
	ns := env.Namespace(t)

	metricsAddr, probeAddr, webhookAddr, uiAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	cmd := newRunCommand()
	g.Expect(cmd.Flags().Parse([]string{
		"--kubeconfig", kubeconfigPath,
		"--metrics-bind-address", metricsAddr,
		"--metrics-secure=false", // read over plain HTTP here; the secure default has tests of its own (internal/operator, config)
		"--health-probe-bind-address", probeAddr,
		"--webhook-bind-address", webhookAddr,
		"--ui-bind-address", uiAddr,
		"--leader-elect", "--leader-election-namespace", ns,
		"--storage-path", t.TempDir(),
		"--deny-egress=",   // the Git server is on loopback
		"--min-interval=0", // the test polls every second
	})).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd.SetContext(ctx)
	go func() { done <- cmd.RunE(cmd, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("gitsync run did not stop")
		}
	})

	srv := gittest.NewServer(t, gittest.Options{})
	sha := srv.CreateRepo("app").Commit("main", "x", map[string]string{"a.yaml": "a: 1\n"})
	repo := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app")},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(repo.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		g.Expect(repo.Status.Artifact.Revision).To(Equal("main@sha1:" + sha))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// The CRD's defaults were applied by the API server.
	g.Expect(repo.Spec.Interval.Duration).To(Equal(time.Minute))
	g.Expect(repo.Spec.Timeout.Duration).To(Equal(60 * time.Second))

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get(fmt.Sprintf("http://%s%s", probeAddr, path))
		g.Expect(code).To(Equal(http.StatusOK), "%s: %s", path, body)
	}
	// The webhook receiver answers; an unsigned delivery wakes nothing.
	resp, err := http.Post(fmt.Sprintf("http://%s/hook/generic", webhookAddr), "application/json",
		strings.NewReader(`{"url": "`+srv.HTTPURL("app")+`", "ref": "refs/heads/main"}`))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))

	code, metrics := get(fmt.Sprintf("http://%s/metrics", metricsAddr))
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(metrics).To(ContainSubstring(`gitsync_source_polls_total{result="fetched"}`))
	g.Expect(metrics).To(ContainSubstring(`controller_runtime_reconcile_total{controller="gitrepository"`))
	g.Expect(metrics).To(ContainSubstring(`gitsync_webhook_requests_total{code="401",provider="generic"} 1`))

	// The web UI, read-only and authenticated: without a token 401; with the token of a
	// ServiceAccount that may read the namespace's sources it lists them; actions are
	// refused.
	code, _ = get(fmt.Sprintf("http://%s/api/sources", uiAddr))
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	token, _ := env.ServiceAccountToken(t, ns, "viewer", rbacv1.PolicyRule{APIGroups: []string{gitsyncv1.GroupVersion.Group},
		Resources: []string{"gitrepositories", "applications"}, Verbs: []string{"get", "list", "watch"}})
	authed := func(method, url string) (int, string) {
		req, err := http.NewRequest(method, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	g.Eventually(func(g Gomega) {
		code, body := authed(http.MethodGet, fmt.Sprintf("http://%s/api/sources", uiAddr))
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring(`"name":"app"`))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	code, _ = authed(http.MethodPost, fmt.Sprintf("http://%s/api/apps/%s/app/sync", uiAddr, ns))
	g.Expect(code).To(Equal(http.StatusForbidden))

	lease := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitsync-leader.gitsync.dev"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
}

func TestRunFailsClearlyWithoutACluster(t *testing.T) {
	cmd := newRunCommand()
	NewWithT(t).Expect(cmd.Flags().Parse([]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")})).To(Succeed())
	cmd.SetContext(context.Background())
	err := cmd.RunE(cmd, nil)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("loading kubeconfig")))
}
