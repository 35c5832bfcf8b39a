package integration

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/notify"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

var (
	notifier          *notify.Dispatcher
	notifyingRecorder recorder.EventRecorder
	// Short backoff and a small queue so retries and overflow show quickly.
	notificationTestOptions = notify.Options{
		RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Attempts: 3, Rate: 100, QueueSize: 50,
		Idle: 2 * time.Second,
	}
)

// notifyFixture is an appFixture whose namespace also holds Providers and Alerts that
// point at an in-process receiver. The GitRepository is created by start, after the
// Alerts are Ready (in the cache), so no event comes before its Alert.
type notifyFixture struct {
	*appFixture
	rcv *receiver.Server
}

func newNotifyFixture(t *testing.T) *notifyFixture {
	f := &appFixture{t: t, ns: env.Namespace(t), srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("org/app")
	return &notifyFixture{appFixture: f, rcv: receiver.New(t)}
}

// provider creates a Provider of the type at the receiver's URL + path, with a Secret
// holding data when it is not nil.
func (f *notifyFixture) provider(name, typ, path string, data map[string]string, mutate ...func(*gitsyncv1.Provider)) {
	f.t.Helper()
	ctx := context.Background()
	p := &gitsyncv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       gitsyncv1.ProviderSpec{Type: typ, Address: f.rcv.URL + path},
	}
	if data != nil {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", Namespace: f.ns}, StringData: data}
		if err := env.Client.Create(ctx, s); err != nil {
			f.t.Fatal(err)
		}
		p.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: s.Name}
	}
	for _, m := range mutate {
		m(p)
	}
	if err := env.Client.Create(ctx, p); err != nil {
		f.t.Fatal(err)
	}
}

// alert creates an Alert for the Provider (all Applications, info) and waits until it is Ready.
func (f *notifyFixture) alert(name, provider string, mutate ...func(*gitsyncv1.Alert)) {
	f.t.Helper()
	a := &gitsyncv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: gitsyncv1.AlertSpec{
			ProviderRef:  gitsyncv1.LocalObjectReference{Name: provider},
			EventSources: []gitsyncv1.EventSource{{Kind: gitsyncv1.ApplicationKind, Name: "*"}},
			Summary:      "test cluster",
		},
	}
	for _, m := range mutate {
		m(a)
	}
	if err := env.Client.Create(context.Background(), a); err != nil {
		f.t.Fatal(err)
	}
	NewWithT(f.t).Eventually(func(g Gomega) {
		got := &gitsyncv1.Alert{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(a), got)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

// start commits the files and creates the GitRepository; it returns the commit.
func (f *notifyFixture) start(files map[string]string, mutate ...func(*gitsyncv1.GitRepository)) string {
	sha := f.repo.Commit("main", "initial", files)
	newGitRepository(f.t, f.ns, "repo", f.srv.HTTPURL("org/app"), nil, "", mutate...)
	return sha
}

// waitRequest waits for a request to the path whose body contains every substring.
func (f *notifyFixture) waitRequest(path string, contains ...string) receiver.Request {
	f.t.Helper()
	var found receiver.Request
	NewWithT(f.t).Eventually(func() bool {
		for _, r := range f.rcv.Requests() {
			if r.Path == path && containsAll(string(r.Body), contains) {
				found = r
				return true
			}
		}
		return false
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue(), "no request to %s with %q; got %s", path, contains, f.bodies)
	return found
}

func (f *notifyFixture) bodies() string {
	var b strings.Builder
	for _, r := range f.rcv.Requests() {
		fmt.Fprintf(&b, "\n%s %s", r.Path, r.Body)
	}
	return b.String()
}

// count is the number of requests to the path whose body contains every substring.
func (f *notifyFixture) count(path string, contains ...string) int {
	n := 0
	for _, r := range f.rcv.Requests() {
		if r.Path == path && containsAll(string(r.Body), contains) {
			n++
		}
	}
	return n
}

func (f *notifyFixture) providerReady(g Gomega, name string) *metav1.Condition {
	p := &gitsyncv1.Provider{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, p)).To(Succeed())
	return apimeta.FindStatusCondition(p.Status.Conditions, gitsyncv1.ReadyCondition)
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	return m
}

// dig walks a decoded JSON document: keys for objects, ints for arrays.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// One Application sync per provider type: the request follows the service's API and
// carries the revision.
func TestNotificationProviderFormats(t *testing.T) {
	const token = "tok-3141592653"
	cases := []struct {
		typ, path string
		secret    map[string]string
		channel   string
		check     func(t *testing.T, f *notifyFixture, sha string)
	}{
		{typ: "slack", path: "/services/T000/B000/XXX", check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/services/T000/B000/XXX", "Applied")
			body := decode(t, r.Body)
			g := NewWithT(t)
			g.Expect(body["text"]).To(Equal("Application/" + f.ns + "/app: Applied"))
			g.Expect(dig(body, "attachments", 0, "color")).To(Equal("good"))
			g.Expect(dig(body, "attachments", 0, "fields", 0, "value")).To(ContainSubstring("main@sha1:" + sha))
			g.Expect(dig(body, "attachments", 0, "fields", 1, "value")).To(Equal("test cluster"))
			g.Expect(r.Header.Get("Authorization")).To(BeEmpty())
		}},
		{typ: "slack", path: "/api/chat.postMessage", secret: map[string]string{"token": token}, channel: "deploys", check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/api/chat.postMessage", "Applied")
			body := decode(t, r.Body)
			g := NewWithT(t)
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + token))
			g.Expect(body["channel"]).To(Equal("deploys"))
			g.Expect(dig(body, "attachments", 0, "fields", 0, "value")).To(ContainSubstring(sha))
		}},
		{typ: "msteams", path: "/webhookb2/abc", check: func(t *testing.T, f *notifyFixture, sha string) {
			body := decode(t, f.waitRequest("/webhookb2/abc", "Applied").Body)
			g := NewWithT(t)
			g.Expect(body["type"]).To(Equal("message"))
			g.Expect(dig(body, "attachments", 0, "contentType")).To(Equal("application/vnd.microsoft.card.adaptive"))
			g.Expect(dig(body, "attachments", 0, "content", "type")).To(Equal("AdaptiveCard"))
			g.Expect(dig(body, "attachments", 0, "content", "body", 2, "facts", 0, "value")).To(ContainSubstring(sha))
		}},
		{typ: "discord", path: "/api/webhooks/1/abc", check: func(t *testing.T, f *notifyFixture, sha string) {
			body := decode(t, f.waitRequest("/api/webhooks/1/abc", "Applied").Body)
			g := NewWithT(t)
			g.Expect(body["username"]).To(Equal("gitsync"))
			g.Expect(dig(body, "embeds", 0, "title")).To(Equal("Application/" + f.ns + "/app: Applied"))
			g.Expect(dig(body, "embeds", 0, "fields", 0, "value")).To(ContainSubstring(sha))
		}},
		{typ: "generic", path: "/hook", secret: map[string]string{"token": token, "headers": "X-Team: platform\n"}, check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/hook", "Applied")
			g := NewWithT(t)
			// The signature verifies with the token, and only with it.
			g.Expect(hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte(notify.Sign([]byte(token), r.Body)))).To(BeTrue())
			g.Expect(r.Header.Get("X-Signature")).NotTo(Equal(notify.Sign([]byte("other"), r.Body)))
			g.Expect(r.Header.Get("X-Team")).To(Equal("platform"))
			var p notify.GenericPayload
			g.Expect(json.Unmarshal(r.Body, &p)).To(Succeed())
			g.Expect(p.InvolvedObject).To(Equal(notify.ObjectRef{APIVersion: "gitsync.dev/v1beta1", Kind: "Application", Namespace: f.ns, Name: "app"}))
			g.Expect(p.Severity).To(Equal("info"))
			g.Expect(p.Reason).To(Equal("Applied"))
			g.Expect(p.Metadata).To(HaveKeyWithValue("revision", "main@sha1:"+sha))
			g.Expect(p.Metadata).To(HaveKeyWithValue("summary", "test cluster"))
		}},
		{typ: "github", secret: map[string]string{"token": token}, check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/repos/org/app/statuses/"+sha, `"state":"success"`)
			body := decode(t, r.Body)
			g := NewWithT(t)
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + token))
			g.Expect(r.Header.Get("Accept")).To(Equal("application/vnd.github+json"))
			g.Expect(body["context"]).To(Equal("gitsync/" + f.ns + "/app"))
		}},
		{typ: "gitlab", secret: map[string]string{"token": token}, check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/api/v4/projects/org%2Fapp/statuses/"+sha, `"state":"success"`)
			g := NewWithT(t)
			g.Expect(r.Header.Get("PRIVATE-TOKEN")).To(Equal(token))
			g.Expect(decode(t, r.Body)["name"]).To(Equal("gitsync/" + f.ns + "/app"))
		}},
		{typ: "gitea", secret: map[string]string{"token": token}, check: func(t *testing.T, f *notifyFixture, sha string) {
			r := f.waitRequest("/api/v1/repos/org/app/statuses/"+sha, `"state":"success"`)
			g := NewWithT(t)
			g.Expect(r.Header.Get("Authorization")).To(Equal("token " + token))
			g.Expect(decode(t, r.Body)["context"]).To(Equal("gitsync/" + f.ns + "/app"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.typ+tc.path, func(t *testing.T) {
			t.Parallel()
			f := newNotifyFixture(t)
			f.provider("p", tc.typ, tc.path, tc.secret, func(p *gitsyncv1.Provider) { p.Spec.Channel = tc.channel })
			f.alert("a", "p")
			f.app("app")
			sha := f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
			f.waitApplied("app", sha)
			tc.check(t, f, sha)
			for _, r := range f.rcv.Requests() {
				NewWithT(t).Expect(r.Method).To(Equal(http.MethodPost))
				NewWithT(t).Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
			}
		})
	}
}

// A broken commit sends its Warning to `error` and `info` Alerts; an exclusion regex
// drops it from a third; the `error` Alert never sees the earlier success.
func TestNotificationSeverityAndExclusion(t *testing.T) {
	f := newNotifyFixture(t)
	for _, name := range []string{"all", "errors", "quiet"} {
		f.provider(name, "generic", "/"+name, nil)
	}
	f.alert("all", "all")
	f.alert("errors", "errors", func(a *gitsyncv1.Alert) { a.Spec.EventSeverity = gitsyncv1.SeverityError })
	f.alert("quiet", "quiet", func(a *gitsyncv1.Alert) { a.Spec.ExclusionList = []string{`^building`} })
	f.app("app")
	sha := f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
	f.waitApplied("app", sha)
	f.waitRequest("/all", `"reason":"Applied"`)
	f.waitRequest("/quiet", `"reason":"Applied"`)

	broken := f.repo.Commit("main", "broken", map[string]string{"cm.yaml": "kind: [unclosed"})
	f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	f.waitRequest("/all", `"reason":"BuildFailed"`, `"severity":"error"`, broken)
	f.waitRequest("/errors", `"reason":"BuildFailed"`, broken)
	// The quiet Alert's provider got the success, so routing works for it; give the
	// failure the time the others needed and check it never came.
	time.Sleep(500 * time.Millisecond)
	g := NewWithT(t)
	g.Expect(f.count("/quiet", "BuildFailed")).To(BeZero(), f.bodies())
	g.Expect(f.count("/errors", "Applied")).To(BeZero(), f.bodies())
	g.Expect(counterValue(g, "gitsync_events_total", map[string]string{"kind": "Application", "type": "Warning", "reason": "BuildFailed"})).
		To(BeNumerically(">=", 1))
}

// counterValue reads a counter with exactly these labels from controller-runtime's registry.
func counterValue(g Gomega, name string, labels map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Commit statuses: pending when the new commit is fetched, then success on the synced
// commit; a broken commit gets pending then failure.
func TestNotificationCommitStatus(t *testing.T) {
	for typ, prefix := range map[string]string{
		"github": "/repos/org/app/statuses/", "gitlab": "/api/v4/projects/org%2Fapp/statuses/", "gitea": "/api/v1/repos/org/app/statuses/",
	} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			f := newNotifyFixture(t)
			f.provider("forge", typ, "", map[string]string{"token": "forge-token"})
			f.alert("status", "forge")
			f.app("app")
			sha := f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
			f.waitApplied("app", sha)
			f.waitRequest(prefix+sha, `"state":"success"`)

			broken := f.repo.Commit("main", "broken", map[string]string{"cm.yaml": "kind: [unclosed"})
			f.waitNotReady("app", gitsyncv1.BuildFailedReason)
			failed := `"state":"failure"`
			if typ == "gitlab" {
				failed = `"state":"failed"`
			}
			f.waitRequest(prefix+broken, failed)

			// In order: pending before the outcome, for both commits. Only requests to
			// this forge's status endpoint count: a port the OS hands out again may still
			// get a late retry of an earlier test's delivery.
			var states []string
			for _, r := range f.rcv.Requests() {
				if !strings.HasPrefix(r.Path, prefix) || len(r.Path) < len(prefix)+7 {
					t.Logf("not a status request of this test: %s %s", r.Method, r.Path)
					continue
				}
				states = append(states, r.Path[len(prefix):len(prefix)+7]+" "+fmt.Sprint(decode(t, r.Body)["state"]))
			}
			short, brokenShort := sha[:7], broken[:7]
			NewWithT(t).Expect(states).To(Equal([]string{
				short + " pending", short + " success", brokenShort + " pending", brokenShort + " " + strings.Split(failed, `"`)[3],
			}))
		})
	}
}

// 500 then 200: one delivery after a retry, Provider Ready. 400: no retry, Provider and
// Alert Ready=False with the status code.
func TestNotificationRetries(t *testing.T) {
	t.Run("500 then 200", func(t *testing.T) {
		t.Parallel()
		f := newNotifyFixture(t)
		f.rcv.Answer(http.StatusInternalServerError)
		f.provider("p", "generic", "/hook", nil)
		f.alert("a", "p")
		f.app("app")
		f.waitApplied("app", f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")}))
		f.waitRequest("/hook", "Applied")
		g := NewWithT(t)
		g.Eventually(func() []int {
			var codes []int
			for _, r := range f.rcv.Requests() {
				codes = append(codes, r.Status)
			}
			return codes
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]int{500, 200}))
		g.Consistently(func() int { return len(f.rcv.Requests()) }).WithTimeout(time.Second).Should(Equal(2))
		reqs := f.rcv.Requests()
		g.Expect(string(reqs[1].Body)).To(Equal(string(reqs[0].Body)), "the retry sends the same message")
		g.Eventually(func(g Gomega) {
			ready := f.providerReady(g, "p")
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Message).To(ContainSubstring("succeeded"))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		// The worker that delivered stops when idle; the next message starts one again.
		key := client.ObjectKey{Namespace: f.ns, Name: "p"}
		g.Eventually(func() bool { return notifier.Running(key) }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
		notifier.Handle(notify.Event{Kind: gitsyncv1.ApplicationKind, Namespace: f.ns, Name: "app", Type: corev1.EventTypeNormal,
			Reason: "Test", Message: "after idle", Time: time.Now()})
		f.waitRequest("/hook", "after idle")
	})
	t.Run("400", func(t *testing.T) {
		t.Parallel()
		f := newNotifyFixture(t)
		f.rcv.Answer(http.StatusBadRequest)
		f.provider("p", "generic", "/hook", nil)
		f.alert("a", "p")
		f.app("app")
		f.waitApplied("app", f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")}))
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			ready := f.providerReady(g, "p")
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(gitsyncv1.DeliveryFailedReason))
			g.Expect(ready.Message).To(ContainSubstring("400 Bad Request"))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			a := &gitsyncv1.Alert{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "a"}, a)).To(Succeed())
			g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition).Reason).To(Equal(gitsyncv1.DeliveryFailedReason))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		g.Consistently(func() int { return len(f.rcv.Requests()) }).WithTimeout(time.Second).Should(Equal(1))
		g.Expect(counterValue(g, "gitsync_notification_deliveries_total", map[string]string{"type": "generic", "result": "failed"})).
			To(BeNumerically(">=", 1))
	})
}

// A provider that never answers does not hold up syncs, and its queue stays bounded
// when 1,000 events arrive.
func TestNotificationHangingProvider(t *testing.T) {
	f := newNotifyFixture(t)
	f.rcv.Hang()
	f.provider("slow", "generic", "/hook", nil, func(p *gitsyncv1.Provider) { p.Spec.Timeout = &metav1.Duration{Duration: time.Hour} })
	f.alert("a", "slow")
	f.app("app")
	sha := f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
	f.waitApplied("app", sha)
	f.waitRequest("/hook", "Applied") // the first delivery is in flight, and hangs

	key := client.ObjectKey{Namespace: f.ns, Name: "slow"}
	for i := range 1000 {
		notifier.Handle(notify.Event{Kind: gitsyncv1.ApplicationKind, Namespace: f.ns, Name: "app", Type: corev1.EventTypeNormal,
			Reason: "Test", Message: fmt.Sprintf("event %d", i), Time: time.Now()})
	}
	g := NewWithT(t)
	g.Eventually(func() int { return notifier.Queued(key) }).WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(Equal(notificationTestOptions.QueueSize))
	g.Consistently(func() int { return notifier.Queued(key) }).WithTimeout(time.Second).
		Should(BeNumerically("<=", notificationTestOptions.QueueSize))

	g.Expect(counterValue(g, "gitsync_notification_deliveries_total", map[string]string{"type": "generic", "result": "dropped"})).
		To(BeNumerically(">=", 1000-notificationTestOptions.QueueSize-1))

	// Syncs go on while the queue is full and the delivery hangs.
	next := f.repo.Commit("main", "next", map[string]string{"cm.yaml": configMapYAML("cm", "v2")})
	f.waitApplied("app", next)
	g.Expect(f.rcv.Requests()).To(HaveLen(1))
}

// A Secret value in an event's text is redacted from the delivered body.
func TestNotificationRedactsSecretValues(t *testing.T) {
	const providerToken = "provider-token-271828"
	f := newNotifyFixture(t)
	f.provider("p", "generic", "/hook", map[string]string{"token": providerToken})
	f.alert("a", "p", func(a *gitsyncv1.Alert) {
		a.Spec.EventSources = []gitsyncv1.EventSource{{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}}
	})
	f.repo.Commit("main", "initial", map[string]string{"cm.yaml": configMapYAML("cm", "v1")})
	newGitRepository(t, f.ns, "repo", f.srv.HTTPURL("org/app"), nil, gitPassword)
	repo := &gitsyncv1.GitRepository{}
	g := NewWithT(t)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "repo"}, repo)).To(Succeed())

	notifyingRecorder.Eventf(repo, nil, corev1.EventTypeWarning, gitsyncv1.FetchFailedReason, "Fetch",
		"fetching with password %s failed; provider token %s", gitPassword, providerToken)
	r := f.waitRequest("/hook", gitsyncv1.FetchFailedReason)
	g.Expect(string(r.Body)).To(ContainSubstring("fetching with password ***** failed; provider token *****"))
	for _, req := range f.rcv.Requests() {
		g.Expect(string(req.Body)).NotTo(ContainSubstring(gitPassword))
		g.Expect(string(req.Body)).NotTo(ContainSubstring(providerToken))
	}
}

// Drift events of an Application (detected with the manager, corrected) reach its Alerts.
func TestNotificationDriftEvents(t *testing.T) {
	f := newNotifyFixture(t)
	f.provider("p", "generic", "/hook", nil)
	f.alert("a", "p", func(a *gitsyncv1.Alert) { a.Spec.InclusionList = []string{"^ConfigMap/"} })
	f.app("app")
	f.waitApplied("app", f.start(map[string]string{"cm.yaml": configMapYAML("cm", "v1")}))

	cm := &corev1.ConfigMap{}
	g := NewWithT(t)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "cm"}, cm)).To(Succeed())
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "drifted" })

	f.waitRequest("/hook", `"reason":"DriftDetected"`, "ConfigMap/"+f.ns+"/cm", "kubectl-edit")
	f.waitRequest("/hook", `"reason":"DriftCorrected"`, "ConfigMap/"+f.ns+"/cm")
}
