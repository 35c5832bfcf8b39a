package bench

import (
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
)

// apiProxy stands between an operator process and the API server (TLS and HTTP/2 on
// both sides, as the operator talks to a real one) and counts every request it passes
// on: requests of another process cannot be counted by wrapping its client. The
// operator authenticates with its own token, which the proxy passes through.
type apiProxy struct {
	srv     *httptest.Server
	counter *apicount.Counter

	mu        sync.Mutex
	recording bool
	recorded  []string
}

func newAPIProxy(b *testing.B) *apiProxy {
	b.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		b.Fatal(err)
	}
	p := &apiProxy{counter: apicount.New()}
	upstream := rest.AnonymousClientConfig(env.Config) // TLS to the API server; the operator's token passes through
	p.counter.Wrap(upstream)
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		b.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     recordingTransport{p: p, next: rt},
		FlushInterval: -1,                         // watches: every event at once
		ErrorLog:      log.New(io.Discard, "", 0), // a watch ended by the operator's exit is no news
	}
	p.srv = httptest.NewUnstartedServer(proxy)
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	b.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// recordingTransport notes each request, with its time, while the proxy records.
type recordingTransport struct {
	p    *apiProxy
	next http.RoundTripper
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.p.mu.Lock()
	if t.p.recording {
		t.p.recorded = append(t.p.recorded, fmt.Sprintf("%s %s %s %s", time.Now().Format("15:04:05.000"),
			apicount.Verb(req), req.URL.Path, req.Header.Get("User-Agent")))
	}
	t.p.mu.Unlock()
	return t.next.RoundTrip(req)
}

// record starts noting every request; the returned func stops and returns them.
func (p *apiProxy) record() (stop func() []string) {
	p.mu.Lock()
	p.recording, p.recorded = true, nil
	p.mu.Unlock()
	return func() []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.recording = false
		return p.recorded
	}
}

// kubeconfig writes a kubeconfig that reaches the API server through the proxy with the
// installed operator's ServiceAccount token (operatorToken) and returns its path.
func (p *apiProxy) kubeconfig(b *testing.B) string {
	b.Helper()
	token, err := operatorToken()
	if err != nil {
		b.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: p.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})}
	kc.AuthInfos["gitsync"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "gitsync"}
	kc.CurrentContext = "bench"
	path := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// formatRecorded is the recorded requests, one per line, indented.
func formatRecorded(lines []string) string {
	if len(lines) == 0 {
		return "none"
	}
	return "\n    " + strings.Join(lines, "\n    ")
}
