package integration

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// A signed push webhook wakes the GitRepository (interval 1h, so nothing else explains
// it) and the new commit is applied; a bad signature or a repository without a webhook
// secret wakes nothing.
func TestWebhookWakesRepositoryAndApplies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("hooked", "1")})
	token := []byte("webhook-token-" + f.ns) // a repeated run's repositories have their own
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: f.ns},
		Data:       map[string][]byte{"token": token},
	})).To(Succeed())
	editRepo(g, f.ns, "repo", func(r *gitsyncv1.GitRepository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
		r.Spec.Ref = &gitsyncv1.GitRepositoryRef{Branch: "main"}
		r.Spec.WebhookSecretRef = &gitsyncv1.LocalObjectReference{Name: "hook"}
	})
	// A second repository of the same URL without a webhook secret: never woken.
	newGitRepository(t, f.ns, "no-secret", f.srv.HTTPURL("app"), &gitsyncv1.GitRepositoryRef{Branch: "main"}, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	})
	f.app("app")
	f.waitApplied("app", sha)
	waitRevision(t, f.ns, "no-secret", "main@sha1:"+sha)

	receiver := httptest.NewServer(webhook.NewHandler(&sources.WebhookCluster{Client: env.Client, APIReader: env.Client}, webhook.Options{}))
	defer receiver.Close()
	post := func(body []byte, signature string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, receiver.URL+"/hook/generic", bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Event", "push")
		if signature != "" {
			req.Header.Set("X-Signature", signature)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	requestedAt := func(name string) string {
		return getRepo(g, f.ns, name).Annotations[gitsyncv1.RequestedAtAnnotation]
	}

	sha2 := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("hooked", "2")})
	body := []byte(`{"url": "` + f.srv.HTTPURL("app") + `", "ref": "refs/heads/main"}`)

	code, out := post(body, sign([]byte("wrong"), body))
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	g.Expect(out).NotTo(ContainSubstring("repo"))
	code, _ = post(body, "")
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	other := []byte(`{"url": "` + f.srv.HTTPURL("app") + `", "ref": "refs/heads/other"}`)
	code, out = post(other, sign(token, other))
	g.Expect(code).To(Equal(http.StatusAccepted))
	g.Expect(out).To(MatchJSON(`{"woken": 0}`))
	g.Expect(requestedAt("repo")).To(BeEmpty())

	code, out = post(body, sign(token, body))
	g.Expect(code).To(Equal(http.StatusAccepted))
	g.Expect(out).To(MatchJSON(`{"woken": 1}`))
	g.Eventually(func() string { return requestedAt("repo") }).WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(BeEmpty())
	f.waitApplied("app", sha2)
	g.Expect(f.configMap(g, "hooked").Data["value"]).To(Equal("2"))
	g.Expect(requestedAt("no-secret")).To(BeEmpty())
	g.Expect(getRepo(g, f.ns, "no-secret").Status.Artifact.Revision).To(Equal("main@sha1:" + sha))
}
