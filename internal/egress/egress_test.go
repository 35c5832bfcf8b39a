package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// The default ranges, as a pure function of the address: the link-local and metadata
// addresses are never dialled by a test.
func TestDeniedDefault(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		denied bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped loopback
		{"169.254.169.254", true},  // cloud metadata
		{"169.254.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"0.0.0.0", true},
		{"::", true},
		{"10.0.0.1", false},
		{"192.168.1.1", false},
		{"8.8.8.8", false},
		{"2001:db8::1", false},
		{"169.255.0.1", false},
		{"128.0.0.1", false},
	} {
		_, got := egress.Denied(netip.MustParseAddr(tc.addr), egress.DefaultDeny)
		if got != tc.denied {
			t.Errorf("Denied(%s) = %v, want %v", tc.addr, got, tc.denied)
		}
	}
	if _, denied := egress.Denied(netip.Addr{}, nil); !denied {
		t.Error("an invalid address must be denied")
	}
}

func TestParseCIDRs(t *testing.T) {
	g := NewWithT(t)
	got, err := egress.ParseCIDRs("10.0.0.0/8, 169.254.169.254,fd00::/8")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(egress.FormatCIDRs(got)).To(Equal("10.0.0.0/8,169.254.169.254/32,fd00::/8"))
	empty, err := egress.ParseCIDRs("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty).NotTo(BeNil())
	g.Expect(empty).To(BeEmpty())
	g.Expect(egress.New(empty)).To(BeNil())
	_, err = egress.ParseCIDRs("10.0.0.0/33")
	g.Expect(err).To(HaveOccurred())
	_, err = egress.ParseCIDRs("example.com")
	g.Expect(err).To(HaveOccurred())
	g.Expect(egress.ParseCIDRs(egress.FormatCIDRs(egress.DefaultDeny))).To(Equal(egress.DefaultDeny))
}

// A name that resolves to loopback is refused at connect time: the listener sees nothing.
func TestTransportRefusesLoopbackByName(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	hc := egress.New(egress.DefaultDeny).Client(nil, 5*time.Second)
	for _, target := range []string{"http://localhost:" + port + "/", "http://" + addr + "/"} {
		_, err := hc.Get(target)
		g.Expect(err).To(HaveOccurred())
		g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
		var de *egress.DeniedError
		g.Expect(errors.As(err, &de)).To(BeTrue())
	}
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())

	// Without a guard the same request goes through.
	var none *egress.Guard
	conn, err := none.Dialer().DialContext(context.Background(), "tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close()
	g.Eventually(ln.Accepted).Should(BeEquivalentTo(1))
}

// A redirect from an allowed host to a denied one is refused, and the denied listener
// receives nothing. 127.0.0.1 stands for "allowed" (only 127.0.0.2/32 is denied here).
func TestRedirectToDeniedHostRefused(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 not usable here: %v", err)
	}
	var deniedHits atomic.Int32
	denied := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		deniedHits.Add(1)
	})}}
	denied.Start()
	defer denied.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, denied.URL+"/metadata", http.StatusFound)
	}))
	defer allowed.Close()

	g2 := egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})
	resp, err := g2.Client(nil, 5*time.Second).Get(allowed.URL)
	if err == nil {
		resp.Body.Close()
	}
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
	g.Expect(deniedHits.Load()).To(BeZero())

}

// Credentials do not follow a redirect to another port, host or scheme (guard off: both
// listeners are on loopback), and do follow one to the same origin.
func TestRedirectDropsCredentialsAcrossOrigins(t *testing.T) {
	g := NewWithT(t)
	got := make(chan http.Header, 1)
	second := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer second.Close()
	_, secondPort, _ := net.SplitHostPort(second.Listener.Addr().String())
	targets := map[string]string{
		"port":   second.URL + "/next",
		"host":   "http://localhost:" + secondPort + "/next",
		"scheme": "", // filled below: https → http on the same host
	}
	tlsFirst := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, second.URL+"/next", http.StatusFound)
	}))
	defer tlsFirst.Close()

	var none *egress.Guard
	for name, target := range targets {
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, http.StatusTemporaryRedirect)
		}))
		client := none.Client(nil, 5*time.Second)
		url := first.URL
		if name == "scheme" {
			client = none.Client(tlsFirst.Client().Transport, 5*time.Second)
			url = tlsFirst.URL
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.SetBasicAuth("user", "S3cr3t!")
		req.Header.Set("X-Api-Key", "k3y")
		req.Header.Set("Cookie", "session=abc")
		req.Header.Set("User-Agent", "gitsync-test")
		resp, err := client.Do(req)
		g.Expect(err).NotTo(HaveOccurred(), name)
		resp.Body.Close()
		h := <-got
		g.Expect(h.Get("Authorization")).To(BeEmpty(), name)
		g.Expect(h.Get("X-Api-Key")).To(BeEmpty(), name)
		g.Expect(h.Get("Cookie")).To(BeEmpty(), name)
		g.Expect(h.Get("User-Agent")).To(Equal("gitsync-test"), name)
		first.Close()
	}

	// The same origin keeps them.
	same := httptest.NewServer(nil)
	same.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/next", http.StatusFound)
			return
		}
		got <- r.Header.Clone()
	})
	defer same.Close()
	req, _ := http.NewRequest(http.MethodGet, same.URL+"/", nil)
	req.SetBasicAuth("user", "S3cr3t!")
	resp, err := none.Client(nil, 5*time.Second).Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect((<-got).Get("Authorization")).NotTo(BeEmpty())
}
