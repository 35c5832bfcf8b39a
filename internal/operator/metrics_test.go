package operator

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"
)

// gitsync run --metrics-secure: /metrics over HTTPS answers 401 without a token, 403 to a
// service account without the reader role, and 200 to one bound to the shipped
// gitsync-metrics-reader ClusterRole (config/monitoring/metrics_reader_role.yaml).
func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	role := &rbacv1.ClusterRole{}
	manifest, err := os.ReadFile(filepath.Join("..", "..", "config", "monitoring", "metrics_reader_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(manifest, role)).To(Succeed())
	g.Expect(role.Name).To(Equal(MetricsReaderRole))
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, role))).To(Succeed())
	reader, readerUser := env.ServiceAccountToken(t, ns, "prometheus")
	other, _ := env.ServiceAccountToken(t, ns, "someone")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, binding) })

	addr := freeAddress(t)
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := metricsserver.NewServer(MetricsServing{Secure: true, CertDir: t.TempDir()}.ServerOptions(addr), env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	scraper := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed, as kubebuilder's ServiceMonitor scrapes it
	}}
	status := func(token string) func() (int, error) {
		return func() (int, error) {
			req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := scraper.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}
	}
	g.Eventually(status("")).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(http.StatusUnauthorized))
	// A token the API server does not know: its TokenReview does not authenticate it.
	g.Expect(status("not-a-token")()).To(Equal(http.StatusUnauthorized))
	g.Expect(status(other)()).To(Equal(http.StatusForbidden))
	g.Eventually(status(reader)).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).
		Should(Equal(http.StatusOK), "a token of %s, bound to %s", readerUser, MetricsReaderRole)

	// Plain HTTP without the flag, as before.
	opts := MetricsServing{}.ServerOptions(":8080")
	g.Expect(opts.SecureServing).To(BeFalse())
	g.Expect(opts.FilterProvider).To(BeNil())
}
