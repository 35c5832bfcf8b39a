package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// `gitsync ui` prints its URL, with this launch's token, and serves the applications the
// kubeconfig's user sees to requests that carry the token and name a loopback host.
func TestUIServesWithTheKubeconfig(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	var out, errOut syncBuffer
	go func() {
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
		code := Execute(ctx, root, []string{"ui", "--address", "127.0.0.1:0", "--kubeconfig", kubeconfigPath})
		done <- result{out: out.String(), err: errOut.String(), code: code}
	}()
	defer func() {
		cancel()
		r := <-done
		g.Expect(r.code).To(Equal(0), r.String())
	}()
	var url string
	g.Eventually(func() string {
		_, rest, _ := strings.Cut(out.String(), "gitsync ui: ")
		url, _, _ = strings.Cut(rest, " ")
		return url
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(MatchRegexp(`^http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}$`))
	base, token, _ := strings.Cut(url, "?token=")
	get := func(token, host string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"api/apps/"+f.ns+"/web", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	code, body := get("", "")
	g.Expect(code).To(Equal(http.StatusUnauthorized), body)
	g.Expect(body).NotTo(ContainSubstring(f.ns))
	code, _ = get(strings.Repeat("0", 64), "")
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	code, _ = get(token, "rebound.example:9080")
	g.Expect(code).To(Equal(http.StatusMisdirectedRequest))
	code, body = get(token, "")
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"sync":"Synced"`))
	g.Expect(body).To(ContainSubstring(`"canSync":true`))
}

// `gitsync ui` listens on loopback unless --allow-remote says otherwise.
func TestUIRefusesANonLoopbackAddress(t *testing.T) {
	g := NewWithT(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		var out, errOut syncBuffer
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
		code := Execute(context.Background(), root, []string{"ui", "--address", addr, "--kubeconfig", kubeconfigPath})
		g.Expect(code).NotTo(Equal(0), addr)
		g.Expect(errOut.String()).To(ContainSubstring("--allow-remote"), addr)
		g.Expect(out.String()).NotTo(ContainSubstring("gitsync ui: http"), addr)
	}
	// Which addresses are loopback: internal/ui's TestLoopbackAddress.
}
