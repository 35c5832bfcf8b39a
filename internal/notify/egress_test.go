package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// providerReader serves one Provider and its Secret (and no GitRepository or
// HelmRepository).
type providerReader struct {
	client.Reader
	p      *gitsyncv1.Provider
	secret map[string][]byte
}

func (r providerReader) Get(_ context.Context, key types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	if key.Namespace != r.p.Namespace {
		return errors.New("not found")
	}
	switch o := obj.(type) {
	case *gitsyncv1.Provider:
		if key.Name == r.p.Name {
			r.p.DeepCopyInto(o)
			return nil
		}
	case *corev1.Secret:
		if r.p.Spec.SecretRef != nil && key.Name == r.p.Spec.SecretRef.Name {
			o.Data = r.secret
			return nil
		}
	}
	return errors.New("not found")
}

func deliverOnce(t *testing.T, p *gitsyncv1.Provider, guard *egress.Guard, secret ...map[string][]byte) error {
	t.Helper()
	r := providerReader{p: p}
	if len(secret) > 0 {
		p.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: "creds"}
		r.secret = secret[0]
	}
	d := NewDispatcher(r, r, Options{Egress: guard, Attempts: 1})
	w := newWorker(d, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, p.Spec.Type)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.attempt(ctx, Message{Event: Event{Kind: "Application", Namespace: p.Namespace, Name: "web", Reason: "Applied", Message: "ok"}})
}

// A Provider whose address is a listener on 127.0.0.1 is refused by the default guard:
// the listener receives no connection, and the error is permanent (not retried).
func TestProviderLoopbackRefused(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, address := range []string{"http://" + ln.Addr().String() + "/hook", "http://localhost:" + port + "/hook"} {
		p := &gitsyncv1.Provider{}
		p.Name, p.Namespace = "hook", "team"
		p.Spec.Type, p.Spec.Address = gitsyncv1.ProviderGeneric, address
		err := deliverOnce(t, p, egress.New(egress.DefaultDeny))
		g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
		var perm permanent
		g.Expect(errors.As(err, &perm)).To(BeTrue())
	}
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())
}

// The Slack token and the Secret's headers do not follow a redirect to another port
// (guard off: both listeners are on loopback).
func TestProviderRedirectDropsToken(t *testing.T) {
	g := NewWithT(t)
	got := make(chan http.Header, 1)
	second := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer second.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, second.URL+"/", http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	p := &gitsyncv1.Provider{}
	p.Name, p.Namespace = "hook", "team"
	p.Spec.Type, p.Spec.Address = gitsyncv1.ProviderSlack, first.URL
	g.Expect(deliverOnce(t, p, nil, map[string][]byte{"token": []byte("xoxb-S3cr3t"), "headers": []byte("X-Api-Key: k3y")})).To(Succeed())
	h := <-got
	g.Expect(h.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(h.Get("Authorization")).To(BeEmpty())
	g.Expect(h.Get("X-Api-Key")).To(BeEmpty())
}

// Git text cannot ping a whole channel on Slack or Discord.
func TestChatMentionsEscaped(t *testing.T) {
	g := NewWithT(t)
	bodies := make(chan []byte, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
	}))
	defer srv.Close()
	evil := "fix <!channel> <!here> <!everyone> @everyone @HERE @channel <@U123> <@&42> & more"
	m := Message{Event: Event{Kind: "Application", Namespace: "team", Name: "web", Reason: "Applied", Message: evil}, Summary: "@everyone"}
	for _, typ := range []string{gitsyncv1.ProviderSlack, gitsyncv1.ProviderDiscord} {
		req, err := Request(context.Background(), Target{Type: typ, Address: srv.URL}, m)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		var body map[string]any
		g.Expect(json.Unmarshal(<-bodies, &body)).To(Succeed())
		text := strings.ToLower(collectStrings(body))
		for _, ping := range []string{"@everyone", "@here", "<@u123>", "<@&42>"} {
			g.Expect(text).NotTo(ContainSubstring(ping), typ)
		}
		if typ == gitsyncv1.ProviderSlack {
			for _, ping := range []string{"<!channel>", "<!here>", "<!everyone>", "@channel"} {
				g.Expect(text).NotTo(ContainSubstring(ping), typ)
			}
			g.Expect(text).To(ContainSubstring("&lt;!channel&gt;"))
		} else {
			g.Expect(body["allowed_mentions"]).To(Equal(map[string]any{"parse": []any{}}))
		}
	}
}

func collectStrings(v any) string {
	var b strings.Builder
	switch v := v.(type) {
	case string:
		b.WriteString(v + "\n")
	case []any:
		for _, e := range v {
			b.WriteString(collectStrings(e))
		}
	case map[string]any:
		for _, e := range v {
			b.WriteString(collectStrings(e))
		}
	}
	return b.String()
}
