package egress_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/net/proxy"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// The proxy URL of a guard is what go-git's SSH transport dials through
// (proxy.FromURL): a denied address is refused before it connects, each guard keeps its
// own ranges, and no guard means no proxy.
func TestProxyURLDialsThroughTheGuard(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	dial := func(proxyURL string) error {
		u, err := url.Parse(proxyURL)
		g.Expect(err).NotTo(HaveOccurred())
		d, err := proxy.FromURL(u, proxy.Direct)
		g.Expect(err).NotTo(HaveOccurred())
		conn, err := d.(proxy.ContextDialer).DialContext(context.Background(), "tcp", ln.Addr().String())
		if err == nil {
			conn.Close()
		}
		return err
	}
	denying := egress.New(egress.DefaultDeny)
	g.Expect(errors.Is(dial(denying.ProxyURL()), egress.ErrDenied)).To(BeTrue())
	g.Expect(denying.ProxyURL()).To(Equal(denying.ProxyURL()))
	g.Expect(ln.Accepted()).To(BeZero())

	linkLocalOnly, err := egress.ParseCIDRs("169.254.0.0/16")
	g.Expect(err).NotTo(HaveOccurred())
	allowing := egress.New(linkLocalOnly)
	g.Expect(allowing.ProxyURL()).NotTo(Equal(denying.ProxyURL()))
	g.Expect(dial(allowing.ProxyURL())).To(Succeed())
	g.Eventually(ln.Accepted).Should(BeNumerically("==", 1))

	var none *egress.Guard
	g.Expect(none.ProxyURL()).To(BeEmpty())
}
