package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// A scrape's outcome by its token and the user's rights; each outcome is kept (no review
// for the next scrape) for allowedFor when allowed, refusedFor when refused, and a review
// that failed is asked again at once.
func TestScrapeAuthDecidesAndKeeps(t *testing.T) {
	g := NewWithT(t)
	var tokenReviews, accessReviews int
	failing := false
	users := map[string]string{"reader-token": "prometheus", "other-token": "someone"}
	auth := newScrapeAuth(
		func(_ context.Context, token string) (*authenticationv1.UserInfo, error) {
			tokenReviews++
			if failing {
				return nil, errors.New("connection refused")
			}
			if name, ok := users[token]; ok {
				return &authenticationv1.UserInfo{Username: name}, nil
			}
			return nil, nil
		},
		func(_ context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error) {
			accessReviews++
			return u.Username == "prometheus" && verb == "get" && path == "/metrics", nil
		})
	now := time.Unix(1_800_000_000, 0)
	auth.now = func() time.Time { return now }
	status := func(token, method, path string) int {
		h, err := auth.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		g.Expect(err).NotTo(HaveOccurred())
		req := httptest.NewRequest(method, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}

	for _, c := range []struct {
		token, method, path string
		want                int
	}{
		{"", http.MethodGet, "/metrics", http.StatusUnauthorized},
		{"not-a-token", http.MethodGet, "/metrics", http.StatusUnauthorized},
		{"other-token", http.MethodGet, "/metrics", http.StatusForbidden},
		{"reader-token", http.MethodPost, "/metrics", http.StatusForbidden},
		{"reader-token", http.MethodGet, "/metrics", http.StatusOK},
	} {
		g.Expect(status(c.token, c.method, c.path)).To(Equal(c.want), "%s %s with %q", c.method, c.path, c.token)
	}
	g.Expect(tokenReviews).To(Equal(4))
	g.Expect(accessReviews).To(Equal(3))

	// Kept: no review for the same scrapes again.
	g.Expect(status("reader-token", http.MethodGet, "/metrics")).To(Equal(http.StatusOK))
	g.Expect(status("other-token", http.MethodGet, "/metrics")).To(Equal(http.StatusForbidden))
	g.Expect(tokenReviews).To(Equal(4))

	// Refusals are asked again after refusedFor, an allowed scrape after allowedFor.
	now = now.Add(refusedFor)
	g.Expect(status("other-token", http.MethodGet, "/metrics")).To(Equal(http.StatusForbidden))
	g.Expect(status("reader-token", http.MethodGet, "/metrics")).To(Equal(http.StatusOK))
	g.Expect(tokenReviews).To(Equal(5))
	now = now.Add(allowedFor)
	failing = true
	g.Expect(status("reader-token", http.MethodGet, "/metrics")).To(Equal(http.StatusInternalServerError))
	g.Expect(status("reader-token", http.MethodGet, "/metrics")).To(Equal(http.StatusInternalServerError))
	g.Expect(tokenReviews).To(Equal(7))
	failing = false
	g.Expect(status("reader-token", http.MethodGet, "/metrics")).To(Equal(http.StatusOK))

	// A non-Bearer Authorization header is no token.
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Basic cmVhZGVyLXRva2Vu")
	g.Expect(bearerToken(req)).To(BeEmpty())
	req.Header.Set("Authorization", "bearer reader-token")
	g.Expect(bearerToken(req)).To(Equal("reader-token"))
}
