// Package gittest runs a real Git server in-process for tests: smart HTTP
// (git http-backend behind net/http/cgi) and SSH (golang.org/x/crypto/ssh in
// front of git upload-pack/receive-pack), serving bare repositories that
// tests commit to, and counting what was served per repository.
//
// It needs the git binary on PATH.
package gittest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Options configures a Server.
type Options struct {
	// Username and Password, when Username != "", are required as HTTP
	// basic auth credentials. SSH always requires ClientIdentity.
	Username, Password string
	// Served, when set, is told of every HTTP request once it has been answered:
	// its method and path, and when it arrived.
	Served func(method, path string, arrived time.Time)
}

// Server is an in-process Git server speaking smart HTTP and SSH. It is safe
// for concurrent use.
type Server struct {
	t     testing.TB
	opts  Options
	root  string // bare repositories live here
	home  string // HOME of every git subprocess
	tmp   string // scratch space for commits
	git   string // path of the git binary
	httpA string // host:port of the HTTP listener, fixed for the server's life
	sshA  string // host:port of the SSH listener, fixed for the server's life

	hostKey   ssh.Signer
	clientKey ed25519.PrivateKey
	sshConfig *ssh.ServerConfig

	lifecycle sync.Mutex // serializes Start and Stop
	http      *httptest.Server
	ssh       *sshServer

	mu     sync.Mutex
	counts map[string]*Counts
	repos  map[string]*Repo
	// fetchDelay holds back HTTP fetches (see SetFetchDelay).
	fetchDelay atomic.Int64
}

// NewServer starts an HTTP and an SSH Git server on random 127.0.0.1 ports.
// t.Cleanup stops them and removes all repositories.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("gittest: git binary not found: %v", err)
	}
	dir := t.TempDir()
	s := &Server{
		t:      t,
		opts:   opts,
		root:   filepath.Join(dir, "repos"),
		home:   filepath.Join(dir, "home"),
		tmp:    filepath.Join(dir, "tmp"),
		git:    gitPath,
		counts: map[string]*Counts{},
		repos:  map[string]*Repo{},
	}
	for _, d := range []string{s.root, s.home, s.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("gittest: %v", err)
		}
	}
	if err := s.initSSHKeys(); err != nil {
		t.Fatalf("gittest: %v", err)
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gittest: listen for HTTP: %v", err)
	}
	sshLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		httpLn.Close()
		t.Fatalf("gittest: listen for SSH: %v", err)
	}
	s.httpA, s.sshA = httpLn.Addr().String(), sshLn.Addr().String()
	s.serve(httpLn, sshLn)
	t.Cleanup(s.Stop) // runs before t.TempDir's removal
	return s
}

// HTTPURL returns the smart HTTP URL of repo: "http://127.0.0.1:PORT/<repo>.git".
func (s *Server) HTTPURL(repo string) string {
	return "http://" + s.httpA + "/" + repoName(repo) + ".git"
}

// SSHURL returns the SSH URL of repo: "ssh://git@127.0.0.1:PORT/<repo>.git".
func (s *Server) SSHURL(repo string) string {
	return "ssh://git@" + s.sshA + "/" + repoName(repo) + ".git"
}

// KnownHosts returns a known_hosts line for the SSH host key.
func (s *Server) KnownHosts() []byte {
	return []byte(knownhosts.Line([]string{s.sshA}, s.hostKey.PublicKey()) + "\n")
}

// ClientIdentity returns the only private key the SSH server accepts, as an
// unencrypted OpenSSH-format PEM block.
func (s *Server) ClientIdentity() []byte {
	block, err := ssh.MarshalPrivateKey(s.clientKey, "gittest client")
	if err != nil {
		s.t.Fatalf("gittest: marshal client key: %v", err)
	}
	return pem.EncodeToMemory(block)
}

// Stop closes both listeners and all open connections, killing running git
// processes. Repositories are kept. Stopping a stopped server is a no-op.
func (s *Server) Stop() {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.http == nil {
		return
	}
	s.ssh.close()
	s.http.CloseClientConnections()
	s.http.Close()
	s.http, s.ssh = nil, nil
}

// Start listens again on the same host:ports after Stop. Starting a running
// server is a no-op.
func (s *Server) Start() {
	s.t.Helper()
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.http != nil {
		return
	}
	httpLn, err := listenAgain(s.httpA)
	if err != nil {
		s.t.Fatalf("gittest: restart HTTP: %v", err)
	}
	sshLn, err := listenAgain(s.sshA)
	if err != nil {
		httpLn.Close()
		s.t.Fatalf("gittest: restart SSH: %v", err)
	}
	s.serve(httpLn, sshLn)
}

// serve starts serving on the given listeners. The caller holds s.lifecycle
// or has not shared s yet.
func (s *Server) serve(httpLn, sshLn net.Listener) {
	hs := &httptest.Server{Listener: httpLn, Config: &http.Server{Handler: http.HandlerFunc(s.serveHTTP)}}
	hs.Start()
	s.http = hs
	s.ssh = newSSHServer(s, sshLn)
}

// listenAgain listens on addr, retrying briefly in case the old socket has
// not been released yet.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("listen on %s: %w", addr, err)
}

// env is the environment of every git subprocess.
func (s *Server) env() []string {
	const date = "1704067200 +0000" // 2024-01-01T00:00:00Z
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.home,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=true",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=gittest",
		"GIT_AUTHOR_EMAIL=gittest@example.com",
		"GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=gittest",
		"GIT_COMMITTER_EMAIL=gittest@example.com",
		"GIT_COMMITTER_DATE=" + date,
	}
}

// serveHTTP checks credentials, counts upload-pack requests and hands the
// request to git http-backend.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Served != nil {
		defer s.opts.Served(r.Method, r.URL.Path, time.Now())
	}
	if s.opts.Username != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(s.opts.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	// net/http/cgi rejects chunked bodies, which git sends for large
	// requests: buffer the body and pass it on with a length.
	var body []byte
	if r.Body != nil && r.ContentLength != 0 {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
	}
	if repo, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/"); ok {
		switch {
		case r.Method == http.MethodGet && rest == "info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
			s.count(repo, func(c *Counts) { c.RefListings++ })
		case r.Method == http.MethodPost && rest == "git-upload-pack" && requestWants(r.Header, body):
			s.count(repo, func(c *Counts) { c.Fetches++ })
			if !s.holdFetch(r) {
				return
			}
		}
	}
	h := &cgi.Handler{
		Path:   s.git,
		Args:   []string{"http-backend"},
		Dir:    s.root,
		Env:    append(s.env(), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1"),
		Stderr: logWriter{s.t, "git http-backend"},
	}
	h.ServeHTTP(w, r)
}

// logWriter writes a git server process's stderr to the test log.
type logWriter struct {
	t      testing.TB
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("gittest: %s: %s", w.prefix, bytes.TrimSpace(p))
	return len(p), nil
}

// initSSHKeys generates the host key and the authorized client key.
func (s *Server) initSSHKeys() error {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate host key: %w", err)
	}
	if s.hostKey, err = ssh.NewSignerFromKey(hostPriv); err != nil {
		return fmt.Errorf("host key signer: %w", err)
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate client key: %w", err)
	}
	s.clientKey = clientPriv
	authorized, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		return fmt.Errorf("client public key: %w", err)
	}
	s.sshConfig = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), authorized.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("public key %s is not authorized", ssh.FingerprintSHA256(key))
		},
	}
	s.sshConfig.AddHostKey(s.hostKey)
	return nil
}

// repoName turns "name", "name.git" or "/name.git" into "name".
func repoName(repo string) string {
	return strings.TrimSuffix(strings.TrimPrefix(repo, "/"), ".git")
}
