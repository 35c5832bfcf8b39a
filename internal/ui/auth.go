package ui

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Auth is how a Server authenticates its requests. Every request but /static/ needs a
// token: in an Authorization: Bearer header, or in the cookie that a login sets (a
// ?token= link, or the login form of the operator's UI).
type Auth int

const (
	// AuthLaunchToken is `gitsync ui`: the token is made at random per Server (Run hands
	// it to ready in the URL), the Host header must name the listen host, a loopback name
	// or an IP address (DNS rebinding: a page of another site never reaches the UI under
	// its own name), and requests are answered with the Server's identity.
	AuthLaunchToken Auth = iota
	// AuthKubernetes is the operator's UI: the token is one the API server accepts
	// (TokenReview), and each request is answered with its caller's rights
	// (SubjectAccessReviews per namespace and kind) over the one cache of the operator's
	// identity. Read-only.
	AuthKubernetes
)

// cookieName holds the token in the browser (HttpOnly: the pages' JS never sees it).
const cookieName = "gitsync-ui-token"

var errUnauthenticated = errors.New("unauthenticated")

// Token is the launch token of an AuthLaunchToken Server ("" for AuthKubernetes).
func (s *Server) Token() string { return s.token }

// authenticate returns who token is: with AuthLaunchToken the Server's identity when it
// is the launch token, with AuthKubernetes the user a TokenReview finds.
func (s *Server) authenticate(ctx context.Context, token string) (*caller, error) {
	if token == "" {
		return nil, errUnauthenticated
	}
	if s.opts.Auth != AuthKubernetes {
		if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
			return nil, errUnauthenticated
		}
		return &caller{name: "local"}, nil
	}
	u, err := s.reviews.user(ctx, token)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errUnauthenticated
	}
	return &caller{name: u.Username, user: u, key: userKey(u)}, nil
}

// requestToken is the request's bearer token, else its cookie's.
func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return c.Value
	}
	return ""
}

// guard authenticates r: it answers (401, a login, a redirect, 421 for a foreign Host)
// and returns false, or returns the request with its caller.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if s.opts.Auth == AuthLaunchToken && !hostAllowed(r.Host, s.listenHost()) {
		http.Error(w, "this host name does not serve the gitsync ui", http.StatusMisdirectedRequest)
		return nil, false
	}
	if strings.HasPrefix(r.URL.Path, "/static/") {
		return r, true
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/login":
		s.login(w, r, formToken(w, r))
		return nil, false
	case r.Method == http.MethodGet && r.URL.Query().Has("token"):
		s.login(w, r, r.URL.Query().Get("token"))
		return nil, false
	}
	c, err := s.authenticate(r.Context(), requestToken(r))
	if err != nil {
		s.unauthenticated(w, r, err)
		return nil, false
	}
	return r.WithContext(withCaller(r.Context(), c)), true
}

func formToken(w http.ResponseWriter, r *http.Request) string {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return ""
	}
	return strings.TrimSpace(r.PostForm.Get("token"))
}

// login checks token and, when it is good, keeps it in a cookie and sends the browser on
// to the page it asked for (without ?token=).
func (s *Server) login(w http.ResponseWriter, r *http.Request, token string) {
	if origin := r.Header.Get("Origin"); r.Method == http.MethodPost && origin != "" {
		if u, err := url.Parse(origin); err != nil || u.Host != r.Host {
			http.Error(w, "cross-site login refused", http.StatusForbidden)
			return
		}
	}
	if _, err := s.authenticate(r.Context(), token); err != nil {
		s.unauthenticated(w, r, err)
		return
	}
	secure := r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode})
	next := "/"
	// Only a path of this server ("//host" would leave it).
	if p := r.URL.Path; r.Method == http.MethodGet && strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\") {
		q := r.URL.Query()
		q.Del("token")
		next = (&url.URL{Path: p, RawQuery: q.Encode()}).String()
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// unauthenticated answers 401: a login page to a browser, JSON to the API; 503 when the
// API server could not review the token.
func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, shown := http.StatusUnauthorized, "log in: a token is needed", ""
	switch {
	case !errors.Is(err, errUnauthenticated):
		code, msg = http.StatusServiceUnavailable, "the token could not be checked now; try again"
		shown = msg
	case requestToken(r) != "" || r.URL.Query().Has("token") || r.Method == http.MethodPost:
		shown = "That token was not accepted."
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="gitsync"`)
	if strings.HasPrefix(r.URL.Path, "/api/") || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		failWith(w, code, msg)
		return
	}
	s.render(w, code, "login.html", page{Title: "Log in", KubeLogin: s.opts.Auth == AuthKubernetes, Message: shown})
}

// hostAllowed is the DNS-rebinding check of `gitsync ui`: the Host header (port aside)
// names the listen host, localhost (or a name under .localhost, which browsers resolve
// to loopback themselves), or is an IP address. An IP address is safe: a page served
// from another site can only reach this server under a name that resolves here, and an
// address is not such a name.
func hostAllowed(hostport, listenHost string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	switch {
	case host == "":
		return false
	case host == "localhost", strings.HasSuffix(host, ".localhost"), net.ParseIP(host) != nil:
		return true
	}
	return listenHost != "" && host == strings.TrimSuffix(strings.ToLower(listenHost), ".")
}
