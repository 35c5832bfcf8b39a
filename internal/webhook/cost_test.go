package webhook

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Only the webhook Secrets of the repositories whose URL the payload names are
// read: none for an unknown URL, whatever the signature.
func TestSecretsReadOnlyForMatchedRepositories(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			g := NewWithT(t)
			body := readTestdata(t, pc.file)

			unknown := &fakeCluster{repos: tenants("https://git.example.org/acme/unknown.git")}
			got := post(t, start(t, unknown, Options{}), pc.name, pc.push, body, pc.sign, "guessed")
			g.Expect(got.code).To(Equal(http.StatusUnauthorized))
			g.Expect(unknown.SecretReads()).To(BeEmpty())

			known := &fakeCluster{repos: tenants(pc.specURL)}
			got = post(t, start(t, known, Options{}), pc.name, pc.push, body, pc.sign, "guessed")
			g.Expect(got.code).To(Equal(http.StatusUnauthorized))
			// The candidates' four secrets, each once; never "elsewhere"'s.
			g.Expect(known.SecretReads()).To(ConsistOf(
				"tenant-a/hook-app", "tenant-a/hook-app-dev", "tenant-b/hook-app", "tenant-c/hook-empty-secret"))
		})
	}
}

// Past Options.MaxConcurrent deliveries in progress the answer is 503 with
// Retry-After, and nothing is read; once a slot frees up, deliveries pass again.
func TestConcurrencyCap(t *testing.T) {
	g := NewWithT(t)
	pc := providerCases[0]
	body := readTestdata(t, pc.file)
	block := make(chan struct{})
	cluster := &fakeCluster{repos: tenants(pc.specURL), block: block, entered: make(chan struct{})}
	base := start(t, cluster, Options{MaxConcurrent: 1})

	first := make(chan reply, 1)
	go func() { first <- post(t, base, pc.name, pc.push, body, pc.sign, "secret-a") }()
	// The first delivery holds the only slot while it waits in Repositories.
	<-cluster.entered
	req, _ := http.NewRequest(http.MethodPost, base+"/hook/github", bytes.NewReader(body))
	req.Header = pc.push.Clone()
	pc.sign(req.Header, "secret-a", body)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
	g.Expect(resp.Header.Get("Retry-After")).To(Equal(retryAfterSeconds))
	g.Expect(cluster.SecretReads()).To(BeEmpty())
	g.Expect(cluster.Woken()).To(BeEmpty())

	close(block)
	g.Expect((<-first).code).To(Equal(http.StatusAccepted))
	cluster.mu.Lock()
	cluster.block = nil
	cluster.mu.Unlock()
	got := post(t, base, pc.name, pc.push, body, pc.sign, "secret-a")
	g.Expect(got.code).To(Equal(http.StatusAccepted))
}

func TestServerTimeouts(t *testing.T) {
	g := NewWithT(t)
	srv := NewServer(NewHandler(&fakeCluster{}, Options{}))
	g.Expect(srv.ReadHeaderTimeout).To(Equal(ReadHeaderTimeout))
	g.Expect(srv.ReadTimeout).To(Equal(ReadTimeout))
	g.Expect(srv.WriteTimeout).To(Equal(WriteTimeout))
	g.Expect(srv.IdleTimeout).To(Equal(IdleTimeout))
	g.Expect(srv.MaxHeaderBytes).To(Equal(MaxHeaderBytes))
	for _, d := range []time.Duration{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout} {
		g.Expect(d).To(BeNumerically(">", 0))
	}

	// A client that sends its headers and then trickles (here: stops sending)
	// its body is cut off at the read timeout, not held forever. Shortened
	// so the test does not wait 30 s.
	srv.ReadTimeout = 300 * time.Millisecond
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Config = srv
	ts.Start()
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /hook/generic HTTP/1.1\r\nHost: x\r\nX-Event: push\r\nX-Signature: sha256=00\r\nContent-Length: 1000\r\n\r\n{\"url\":")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conn.SetReadDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	g.Expect(err).NotTo(HaveOccurred(), "the server answers (or hangs up) instead of waiting for the body")
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
}
