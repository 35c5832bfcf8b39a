package operator

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// An informer's list made while the API server cannot be reached succeeds once it is back,
// instead of failing into the reflector's backoff; other errors come back at once.
func TestPatientListerWatcherWaitsForTheAPIServer(t *testing.T) {
	proxy := newTCPProxy(t, env.Config.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + proxy.addr
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceDefault, fields.Everything())
	patient := patientListerWatcher{toolscache.ToListerWatcherWithContext(lw)}
	ctx := context.Background()

	proxy.stop()
	if _, err := lw.List(metav1.ListOptions{}); !utilnet.IsConnectionRefused(err) {
		t.Fatalf("without the API server a plain list fails with connection refused; got %v", err)
	}
	go func() {
		time.Sleep(time.Second)
		proxy.start(t)
	}()
	if _, err := patient.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the list did not wait for the API server: %v", err)
	}
	w, err := patient.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching: %v", err)
	}
	w.Stop()

	missing := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "nosuchresources", metav1.NamespaceDefault, fields.Everything())
	if _, err := (patientListerWatcher{toolscache.ToListerWatcherWithContext(missing)}).ListWithContext(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an error from the API server comes back as is: got %v", err)
	}
}

// tcpProxy forwards 127.0.0.1:<port> to a target; stop refuses connections (as a stopped
// API server does) and start listens again on the same port.
type tcpProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newTCPProxy(t *testing.T, targetURL string) *tcpProxy {
	u, err := url.Parse(targetURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: ln.Addr().String(), target: u.Host}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *tcpProxy) start(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Errorf("listening again: %v", err)
		return
	}
	p.serve(ln)
}
