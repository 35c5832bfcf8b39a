package monitoring

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
// removed binding stops working within AllowedFor, and a refused caller is asked again
// after RefusedFor. Allowed and refused outcomes are kept apart, each at most
// KeptScrapes: anyone who reaches the port can send refused tokens, and so may only ever
// evict refusals, never the allowed scrapers' outcomes (which only callers holding
// rights can add).
const (
	AllowedFor  = time.Minute
	RefusedFor  = 10 * time.Second
	KeptScrapes = 1024
)

// ScrapeFilter is the metrics server's FilterProvider for a secure /metrics: a request's
// bearer token is reviewed by the API server (TokenReview), 401 when it is missing or
// not accepted, and its user must be allowed the request's verb on the non-resource URL
// of its path (SubjectAccessReview), 403 otherwise; 500 when the API server could not
// answer. That is what controller-runtime's filters.WithAuthenticationAndAuthorization
// does; it is not used because it links k8s.io/apiserver's delegating authenticator and
// authorizer, and with them gRPC, OpenTelemetry and the API server's CEL libraries: 5.6
// MiB of the binary, most of it resident in every operator. Its token cache is also one
// LRU for accepted and refused tokens alike, which random tokens can flush.
func ScrapeFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	r, err := newReviews(config, httpClient)
	if err != nil {
		return nil, err
	}
	return newScrapeAuth(r.user, r.allowed).filter, nil
}

// reviews asks the API server who a token is (TokenReview) and what its user may
// (SubjectAccessReview on a non-resource URL).
type reviews struct {
	user    func(ctx context.Context, token string) (*authenticationv1.UserInfo, error)
	allowed func(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error)
}

func newReviews(config *rest.Config, httpClient *http.Client) (*reviews, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	tokens, access := authn.TokenReviews(), authz.SubjectAccessReviews()
	return &reviews{
		user: func(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
			review, err := tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil {
				return nil, err
			}
			if !review.Status.Authenticated || review.Status.Error != "" {
				return nil, nil
			}
			return &review.Status.User, nil
		},
		allowed: func(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error) {
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
		},
	}, nil
}

// scrapeAuth decides who may scrape, through a token review and an access review, and
// keeps each outcome for a while (reviews are two API requests per scrape otherwise).
type scrapeAuth struct {
	user    func(ctx context.Context, token string) (*authenticationv1.UserInfo, error)
	allowed func(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, error)
	now     func() time.Time

	mu sync.Mutex
	// granted holds allowed outcomes only, refused the 401s and 403s.
	granted, refused map[[sha256.Size]byte]scrapeOutcome
}

// scrapeOutcome is an HTTP status (200: allowed) and until when it holds.
type scrapeOutcome struct {
	status int
	user   string
	until  time.Time
}

func newScrapeAuth(user func(context.Context, string) (*authenticationv1.UserInfo, error),
	allowed func(context.Context, *authenticationv1.UserInfo, string, string) (bool, error)) *scrapeAuth {
	return &scrapeAuth{user: user, allowed: allowed, now: time.Now,
		granted: map[[sha256.Size]byte]scrapeOutcome{}, refused: map[[sha256.Size]byte]scrapeOutcome{}}
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
	now := a.now()
	a.mu.Lock()
	out, ok := a.granted[key]
	if !ok {
		out, ok = a.refused[key]
	}
	a.mu.Unlock()
	if ok && now.Before(out.until) {
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
	kept := a.refused
	out.until = now.Add(RefusedFor)
	if out.status == http.StatusOK {
		kept, out.until = a.granted, now.Add(AllowedFor)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.granted, key) // an outcome lives in one of the two
	delete(a.refused, key)
	if len(kept) >= KeptScrapes {
		for k, o := range kept { // the expired first, then any
			if !now.Before(o.until) {
				delete(kept, k)
			}
		}
		for k := range kept {
			if len(kept) < KeptScrapes {
				break
			}
			delete(kept, k)
		}
	}
	kept[key] = out
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
