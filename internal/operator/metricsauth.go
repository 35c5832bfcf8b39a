package operator

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a scrape's outcome is kept per token, method and path: a revoked token or a
// removed binding stops working within allowedFor, and a scraper refused is asked again
// after refusedFor. At most reviewedScrapes outcomes are kept.
const (
	allowedFor      = time.Minute
	refusedFor      = 10 * time.Second
	reviewedScrapes = 1024
)

// metricsFilter is the metrics server's FilterProvider for MetricsServing.Secure: a
// request's bearer token is reviewed by the API server (TokenReview), 401 when it is
// missing or not accepted, and its user must be allowed the request's verb on the
// non-resource URL of its path (SubjectAccessReview), 403 otherwise; 500 when the API
// server could not answer. That is what controller-runtime's
// filters.WithAuthenticationAndAuthorization does; it is not used because it links
// k8s.io/apiserver's delegating authenticator and authorizer, and with them gRPC,
// OpenTelemetry and the API server's CEL libraries: 5.6 MiB of the binary, most of it
// resident in every operator, whether it serves /metrics securely or not.
func metricsFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	tokens, access := authn.TokenReviews(), authz.SubjectAccessReviews()
	a := newScrapeAuth(
		func(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
			review, err := tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil {
				return nil, err
			}
			if !review.Status.Authenticated || review.Status.Error != "" {
				return nil, nil
			}
			return &review.Status.User, nil
		},
		func(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error) {
			extra := map[string]authorizationv1.ExtraValue{}
			for k, v := range u.Extra {
				extra[k] = authorizationv1.ExtraValue(v)
			}
			review, err := access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
			}}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return review.Status.Allowed, nil
		})
	return a.filter, nil
}

// scrapeAuth decides who may scrape, through a token review and an access review, and
// keeps each outcome for a while (reviews are two API requests per scrape otherwise).
type scrapeAuth struct {
	user    func(ctx context.Context, token string) (*authenticationv1.UserInfo, error)
	allowed func(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error)
	now     func() time.Time

	mu       sync.Mutex
	outcomes map[[sha256.Size]byte]scrapeOutcome
}

// scrapeOutcome is an HTTP status (200: allowed) and until when it holds.
type scrapeOutcome struct {
	status int
	user   string
	until  time.Time
}

func newScrapeAuth(user func(context.Context, string) (*authenticationv1.UserInfo, error),
	allowed func(context.Context, *authenticationv1.UserInfo, string, string) (bool, error)) *scrapeAuth {
	return &scrapeAuth{user: user, allowed: allowed, now: time.Now, outcomes: map[[sha256.Size]byte]scrapeOutcome{}}
}

func (a *scrapeAuth) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := a.decide(r.Context(), bearerToken(r), strings.ToLower(r.Method), r.URL.Path)
		switch {
		case err != nil:
			log.Error(err, "reviewing a metrics scrape")
			http.Error(w, "the scrape's token or rights could not be reviewed", http.StatusInternalServerError)
		case out.status == http.StatusUnauthorized:
			http.Error(w, "Unauthorized", out.status)
		case out.status == http.StatusForbidden:
			http.Error(w, fmt.Sprintf("Authorization denied for user %s", out.user), out.status)
		default:
			next.ServeHTTP(w, r)
		}
	}), nil
}

// decide returns the outcome of a request with token for verb on path: kept, or
// reviewed now (an error of a review is not kept).
func (a *scrapeAuth) decide(ctx context.Context, token, verb, path string) (scrapeOutcome, error) {
	if token == "" {
		return scrapeOutcome{status: http.StatusUnauthorized}, nil
	}
	key := sha256.Sum256([]byte(token + "\x00" + verb + "\x00" + path))
	a.mu.Lock()
	out, ok := a.outcomes[key]
	a.mu.Unlock()
	if ok && a.now().Before(out.until) {
		return out, nil
	}
	u, err := a.user(ctx, token)
	if err != nil {
		return scrapeOutcome{}, fmt.Errorf("reviewing a token: %w", err)
	}
	out = scrapeOutcome{status: http.StatusUnauthorized}
	if u != nil {
		allowed, err := a.allowed(ctx, u, verb, path)
		if err != nil {
			return scrapeOutcome{}, fmt.Errorf("reviewing the access of %s: %w", u.Username, err)
		}
		out = scrapeOutcome{status: http.StatusForbidden, user: u.Username}
		if allowed {
			out.status = http.StatusOK
		}
	}
	out.until = a.now().Add(refusedFor)
	if out.status == http.StatusOK {
		out.until = a.now().Add(allowedFor)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.outcomes) >= reviewedScrapes {
		a.outcomes = map[[sha256.Size]byte]scrapeOutcome{}
	}
	a.outcomes[key] = out
	return out, nil
}

// bearerToken is the token of the request's Authorization: Bearer header, "" without one.
func bearerToken(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
