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

// `gitsync ui` prints its URL and serves the applications the kubeconfig's user sees.
func TestUIServesWithTheKubeconfig(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	var out, errOut syncBuffer
	go func() {
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
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
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(HavePrefix("http://127.0.0.1:"))
	resp, err := http.Get(url + "api/apps/" + f.ns + "/web")
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	g.Expect(string(body)).To(ContainSubstring(`"sync":"Synced"`))
	g.Expect(string(body)).To(ContainSubstring(`"canSync":true`))
}
