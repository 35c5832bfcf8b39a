package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/notify"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// Events of a HelmRepository reach the Alerts that name its kind (a refused password as
// a Warning, then the new index); a chart Application's sync names the chart version as
// its revision; commit status providers set no status for a chart version (there is no
// commit), even when a GitRepository of the same name exists, and stay Ready.
func TestNotificationHelmRepository(t *testing.T) {
	const password = "chart-pass-1618"
	srv := chartserver.NewRepo(t)
	srv.Username, srv.Password = "ann", password
	srv.Add("web", "1.0.0", webChart(t, "1.0.0"))

	f := newNotifyFixture(t)
	f.provider("chat", "generic", "/hook", nil)
	f.provider("forge", "github", "", map[string]string{"token": "forge-token"})
	f.alert("chat", "chat", func(a *gitsyncv1.Alert) {
		a.Spec.EventSources = []gitsyncv1.EventSource{
			{Kind: gitsyncv1.HelmRepositoryKind, Name: "*"}, {Kind: gitsyncv1.ApplicationKind, Name: "web"},
			{Kind: gitsyncv1.GitRepositoryKind, Name: "charts"}}
	})
	f.alert("status", "forge")

	ctx := context.Background()
	g := NewWithT(t)
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: f.ns},
		Data: map[string][]byte{"username": []byte("ann"), "password": []byte("wrong-pass"), "ca.crt": srv.CA}}
	g.Expect(env.Client.Create(ctx, creds)).To(Succeed())
	repo := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: f.ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: srv.URL, Interval: &metav1.Duration{Duration: 500 * time.Millisecond},
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "creds"}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	denied := f.waitRequest("/hook", `"kind":"HelmRepository"`, `"reason":"AuthenticationFailed"`)
	g.Expect(decode(t, denied.Body)["severity"]).To(Equal("error"))

	creds.Data["password"] = []byte(password)
	g.Expect(env.Client.Update(ctx, creds)).To(Succeed())
	stored := f.waitRequest("/hook", `"kind":"HelmRepository"`, `"reason":"NewArtifact"`)
	var p notify.GenericPayload
	g.Expect(json.Unmarshal(stored.Body, &p)).To(Succeed())
	g.Expect(p.InvolvedObject.Name).To(Equal("charts"))
	g.Expect(p.Metadata["revision"]).To(HavePrefix("sha256:"))

	f.chartApp("web")
	f.waitAppliedAt("web", "web@1.0.0")
	applied := f.waitRequest("/hook", `"kind":"Application"`, `"reason":"Applied"`)
	g.Expect(json.Unmarshal(applied.Body, &p)).To(Succeed())
	g.Expect(p.Metadata).To(HaveKeyWithValue("revision", "web@1.0.0"))
	g.Expect(p.Metadata).To(HaveKeyWithValue("chart", "web"))
	g.Expect(p.Metadata).To(HaveKeyWithValue("chartVersion", "1.0.0"))
	g.Expect(p.Metadata).NotTo(HaveKey("commitURL"))

	// A GitRepository of the same name fetches a commit: the chart Application does not
	// follow it, so no `pending` status is set on that commit for it.
	f.repo.Commit("main", "initial", map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
	newGitRepository(t, f.ns, "charts", f.srv.HTTPURL("org/app"), nil, "")
	f.waitRequest("/hook", `"kind":"GitRepository"`, `"reason":"NewArtifact"`)

	// A HelmRepository event whose text holds its password: redacted like a GitRepository's.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	notifyingRecorder.Eventf(repo, nil, corev1.EventTypeWarning, gitsyncv1.FetchFailedReason, "Fetch", "login with %s refused", password)
	f.waitRequest("/hook", "login with ***** refused")

	// The forge got nothing (no commit to set a status on) and its Provider and Alert
	// stay Ready: the chart sync and the GitRepository of the same name made no status.
	g.Consistently(func(g Gomega) {
		if ready := f.providerReady(g, "forge"); ready != nil {
			g.Expect(ready.Reason).NotTo(Equal(gitsyncv1.DeliveryFailedReason), ready.Message)
		}
		a := &gitsyncv1.Alert{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "status"}, a)).To(Succeed())
		g.Expect(a.Status.Conditions).NotTo(ContainElement(HaveField("Reason", gitsyncv1.DeliveryFailedReason)))
	}).WithTimeout(time.Second).WithPolling(pollInterval).Should(Succeed())
	for _, r := range f.rcv.Requests() {
		g.Expect(r.Path).NotTo(ContainSubstring("/statuses/"), f.bodies())
		g.Expect(string(r.Body)).NotTo(ContainSubstring(password))
	}
	g.Expect(strings.Count(f.bodies(), `"reason":"Applied"`)).To(Equal(1), f.bodies())
}

// chartApp creates an Application of the chart "web" of the namespace's HelmRepository "charts".
func (f *notifyFixture) chartApp(name string) {
	(&helmFixture{f.appFixture}).chartApp(name, "web", "")
}
