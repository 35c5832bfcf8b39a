package monitoring

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// scrape sends GET /metrics with token through h and returns the status.
func scrape(h http.Handler, token string) int {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// The API server decides: no token or one it does not accept 401, an account without
// get on /metrics 403, one bound to a role that has it 200.
func TestScrapeFilterAsksTheAPIServer(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := env.Namespace(t)
	reader, readerUser := env.ServiceAccountToken(t, ns, "prometheus")
	other, _ := env.ServiceAccountToken(t, ns, "someone")
	grantMetrics(t, ns, readerUser)

	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	filter, err := ScrapeFilter(env.Config, httpClient)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(scrape(h, "")).To(gomega.Equal(http.StatusUnauthorized))
	g.Expect(scrape(h, "not-a-token")).To(gomega.Equal(http.StatusUnauthorized))
	g.Expect(scrape(h, other)).To(gomega.Equal(http.StatusForbidden))
	g.Eventually(func() int { return scrape(h, reader) }).Should(gomega.Equal(http.StatusOK))
}

// A flood of random tokens (anyone who reaches the port can send them) does not flush
// the allowed scraper's kept outcome: its next scrape needs no review.
func TestScrapeCacheNotFlushableByRandomTokens(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := env.Namespace(t)
	reader, readerUser := env.ServiceAccountToken(t, ns, "prometheus")
	grantMetrics(t, ns, readerUser)
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// The real reviews, counted.
	var reviews atomic.Int64
	real, err := newReviews(env.Config, httpClient)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	a := newScrapeAuth(func(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
		reviews.Add(1)
		return real.user(ctx, token)
	}, real.allowed)
	h, err := a.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() int { return scrape(h, reader) }).Should(gomega.Equal(http.StatusOK))

	for i := range 2 * KeptScrapes {
		g.Expect(scrape(h, fmt.Sprintf("random-%d", i))).To(gomega.Equal(http.StatusUnauthorized))
	}
	before := reviews.Load()
	g.Expect(scrape(h, reader)).To(gomega.Equal(http.StatusOK))
	g.Expect(reviews.Load()).To(gomega.Equal(before), "the allowed scraper was reviewed again: its outcome was flushed")
	g.Expect(len(a.refused)).To(gomega.BeNumerically("<=", KeptScrapes))
	g.Expect(a.granted).To(gomega.HaveLen(1))
}

// grantMetrics binds get on /metrics to user (a ClusterRole: non-resource URLs are
// cluster-wide), as config/monitoring's gitsync-metrics-reader does.
func grantMetrics(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	name := "metrics-reader-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
	})
}
