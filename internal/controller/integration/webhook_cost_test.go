package integration

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// A delivery reads, from the API server, only the webhook Secret of the repository its
// URL names, and only when that Secret changed since the last read: an unknown URL
// reads none, a second delivery for the same repository reads none.
func TestWebhookReadsOnlyMatchedChangedSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	const knownURL, otherURL = "https://git.example.com/team/known.git", "https://git.example.com/team/other.git"
	for name, token := range map[string]string{"known-hook": "known-" + ns, "other-hook": "other-" + ns} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string][]byte{"token": []byte(token)},
		})).To(Succeed())
	}
	for name, url := range map[string]string{"known": knownURL, "other": otherURL} {
		newGitRepository(t, ns, name, url, &gitsyncv1.GitRepositoryRef{Branch: "main"}, "", func(r *gitsyncv1.GitRepository) {
			r.Spec.Suspend = true
			r.Spec.WebhookSecretRef = &gitsyncv1.LocalObjectReference{Name: name + "-hook"}
		})
	}

	// The metadata-only cache, as the manager's, and an API reader that counts its requests.
	metaCache, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	cacheCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = metaCache.Start(cacheCtx) }()
	g.Expect(metaCache.WaitForCacheSync(ctx)).To(BeTrue())
	counter := apicount.New()
	cfg := rest.CopyConfig(env.Config)
	counter.Wrap(cfg)
	reader, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	// Discovery happens on a client's first request: get it done before counting.
	g.Expect(reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other-hook"}, &corev1.Secret{})).To(Succeed())

	receiver := httptest.NewServer(webhook.NewHandler(&sources.WebhookCluster{
		Client: env.Client, APIReader: reader, SecretMetadata: metaCache,
	}, webhook.Options{}))
	defer receiver.Close()
	post := func(url, secret string) int {
		body := []byte(`{"url": "` + url + `", "ref": "refs/heads/main"}`)
		req, err := http.NewRequest(http.MethodPost, receiver.URL+"/hook/generic", bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-Event", "push")
		req.Header.Set("X-Signature", sign([]byte(secret), body))
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	reads := func(f func()) int {
		before := counter.Snapshot()
		f()
		return apicount.Total(counter.Since(before))
	}

	g.Expect(reads(func() {
		g.Expect(post("https://git.example.com/team/unknown.git", "guessed")).To(Equal(http.StatusUnauthorized))
	})).To(Equal(0), "an unknown URL reads no Secret")
	g.Expect(reads(func() {
		g.Expect(post(knownURL, "guessed")).To(Equal(http.StatusUnauthorized))
	})).To(Equal(1), "a known URL reads its own repository's Secret only")
	g.Expect(reads(func() {
		g.Expect(post(knownURL, "known-"+ns)).To(Equal(http.StatusAccepted))
		g.Expect(post(knownURL, "guessed")).To(Equal(http.StatusUnauthorized))
	})).To(Equal(0), "an unchanged Secret is not read again")

	// A rotated token is read once, when the watch shows the Secret's new resourceVersion.
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "known-hook"}, secret)).To(Succeed())
	secret.Data["token"] = []byte("rotated-" + ns)
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	g.Expect(reads(func() {
		g.Eventually(func() int { return post(knownURL, "rotated-"+ns) }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(http.StatusAccepted))
		g.Expect(post(knownURL, "known-"+ns)).To(Equal(http.StatusUnauthorized))
	})).To(Equal(1))
}
