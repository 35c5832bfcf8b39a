package integration

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// webChart is a small chart of the project's own: a ConfigMap with values and a
// Deployment; version 1.2.0 and later also render a Service.
func webChart(t *testing.T, version string) []byte {
	files := map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"values.yaml":      "color: blue\nsize: small\nreplicas: 1\n",
		"values-prod.yaml": "size: large\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-web
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  chart: {{ .Chart.Version | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
`,
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "example.com/web:{{ .Chart.Version }}"}]
`,
	}
	if version >= "1.2.0" {
		files["templates/svc.yaml"] = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  ports: [{port: 80}]\n  selector: {app: web}\n"
	}
	return chartserver.Package(t, "web", files)
}

// helmFixture is a namespace with a HelmRepository named "charts".
type helmFixture struct{ *appFixture }

func newHelmFixture(t *testing.T, url string, secret map[string][]byte) *helmFixture {
	t.Helper()
	return newHelmFixtureIn(t, env.Namespace(t), url, secret)
}

// newHelmFixtureIn is newHelmFixture in the namespace ns.
func newHelmFixtureIn(t *testing.T, ns, url string, secret map[string][]byte) *helmFixture {
	t.Helper()
	ctx := context.Background()
	f := &helmFixture{&appFixture{t: t, ns: ns}}
	repo := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: f.ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: url, Interval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	if secret != nil {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: f.ns}, Data: secret}
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		repo.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: "creds"}
	}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	return f
}

// chartApp creates an Application of chart from the fixture's HelmRepository.
func (f *helmFixture) chartApp(name, chart, version string, mutate ...func(*gitsyncv1.Application)) {
	f.t.Helper()
	f.app(name, append([]func(*gitsyncv1.Application){func(a *gitsyncv1.Application) {
		a.Spec.SourceRef = gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}
		a.Spec.Prune = true
		a.Spec.Helm = &gitsyncv1.HelmSpec{Chart: chart, Version: version}
	}}, mutate...)...)
}

func (f *helmFixture) helmRepo(g Gomega) *gitsyncv1.HelmRepository {
	repo := &gitsyncv1.HelmRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "charts"}, repo)).To(Succeed())
	return repo
}

func TestHelmRepositoryHTTPWithBasicAuth(t *testing.T) {
	g := NewWithT(t)
	srv := chartserver.NewRepo(t)
	srv.Username, srv.Password = "ann", "s3cret"
	srv.Add("web", "1.0.0", webChart(t, "1.0.0"))
	srv.Add("web", "1.1.0", webChart(t, "1.1.0"))
	f := newHelmFixture(t, srv.URL, map[string][]byte{"username": []byte("ann"), "password": []byte("s3cret"), "ca.crt": srv.CA})
	f.chartApp("web", "web", ">=1.0.0 <2.0.0", func(a *gitsyncv1.Application) {
		a.Spec.Helm.ValuesFiles = []string{"values-prod.yaml"}
		a.Spec.Helm.Values = &runtime.RawExtension{Raw: []byte(`{"color":"green"}`)}
	})

	app := f.waitAppliedAt("web", "web@1.1.0")
	g.Expect(app.Status.Sync.Chart).To(Equal("web"))
	g.Expect(app.Status.Sync.ChartVersion).To(Equal("1.1.0"))
	g.Expect(app.Status.History[0].ChartVersion).To(Equal("1.1.0"))
	cm := f.configMap(g, "web-web")
	g.Expect(cm.Data).To(Equal(map[string]string{"color": "green", "size": "large", "chart": "1.1.0", "upgrade": "false"}))
	g.Expect(cm.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "web"))
	repo := f.helmRepo(g)
	g.Expect(apimeta.IsStatusConditionTrue(repo.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	g.Expect(repo.Status.Artifact.Digest).To(HavePrefix("sha256:"))
	g.Expect(srv.ChartDownloads.Load()).To(BeEquivalentTo(1))

	// Polls that find nothing new download nothing: no index, no chart.
	indexBytes, polls := srv.IndexBytes.Load(), srv.IndexRequests.Load()
	g.Eventually(srv.IndexRequests.Load).WithTimeout(waitTimeout).Should(BeNumerically(">=", polls+3))
	g.Expect(srv.IndexBytes.Load()).To(Equal(indexBytes))
	g.Expect(srv.ChartDownloads.Load()).To(BeEquivalentTo(1))

	// Drift on a rendered object is corrected.
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web-web"}, deploy)).To(Succeed())
	deploy.Spec.Template.Spec.Containers[0].Image = "example.com/web:hacked"
	g.Expect(env.Client.Update(context.Background(), deploy, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web-web"}, deploy)).To(Succeed())
		return deploy.Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("example.com/web:1.1.0"))

	// A new version in the range is applied like a new commit (an upgrade); one outside is not.
	srv.Add("web", "1.2.0", webChart(t, "1.2.0"))
	srv.Add("web", "2.0.0", webChart(t, "2.0.0"))
	f.waitAppliedAt("web", "web@1.2.0")
	cm = f.configMap(g, "web-web")
	g.Expect(cm.Data).To(HaveKeyWithValue("chart", "1.2.0"))
	g.Expect(cm.Data).To(HaveKeyWithValue("upgrade", "true"))
	g.Expect(f.exists(g, &corev1.Service{}, "web-web")).To(BeTrue())

	// Values removed go back to the chart's defaults.
	f.edit(g, "web", func(a *gitsyncv1.Application) { a.Spec.Helm.ValuesFiles, a.Spec.Helm.Values = nil, nil })
	g.Eventually(func(g Gomega) map[string]string {
		return f.configMap(g, "web-web").Data
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(HaveKeyWithValue("color", "blue"), HaveKeyWithValue("size", "small")))

	// Each new index is an event of the repository.
	g.Eventually(func(g Gomega) []string {
		var reasons []string
		for _, e := range eventsFor(g, f.ns, "charts") {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement("NewArtifact"))

	// An unreachable repository keeps the last index and the applied chart.
	srv.Fail(http.StatusInternalServerError)
	g.Eventually(func(g Gomega) string {
		ready := apimeta.FindStatusCondition(f.helmRepo(g).Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		return ready.Reason + ": " + ready.Message
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("FetchFailed: GET " + srv.URL + "/index.yaml: 500"))
	g.Expect(f.helmRepo(g).Status.Artifact.Digest).NotTo(BeEmpty())
	g.Consistently(func(g Gomega) {
		app := f.get(g, "web")
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		g.Expect(f.exists(g, &corev1.ConfigMap{}, "web-web")).To(BeTrue())
	}).WithTimeout(2 * time.Second).WithPolling(pollInterval).Should(Succeed())

	// Suspended: no more polls.
	srv.Fail(0)
	repo = f.helmRepo(g)
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Suspend = true
	g.Expect(env.Client.Patch(context.Background(), repo, base)).To(Succeed())
	time.Sleep(time.Second) // a poll already under way ends
	polls = srv.IndexRequests.Load()
	g.Consistently(srv.IndexRequests.Load).WithTimeout(2 * time.Second).Should(Equal(polls))
}

func TestHelmRepositoryOCIWithBasicAuth(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "bob", "hunter2")
	reg.Push(t, "web", "1.0.0", webChart(t, "1.0.0"))
	f := newHelmFixture(t, reg.URL(), map[string][]byte{"username": []byte("bob"), "password": []byte("hunter2")})
	f.chartApp("web", "web", "")
	f.waitAppliedAt("web", "web@1.0.0")
	g.Expect(f.configMap(g, "web-web").Data).To(HaveKeyWithValue("chart", "1.0.0"))
	blobs := reg.BlobDownloads.Load()

	// Polls list tags; an unchanged tag list pulls nothing.
	lists := reg.TagLists.Load()
	g.Eventually(reg.TagLists.Load).WithTimeout(waitTimeout).Should(BeNumerically(">=", lists+3))
	g.Expect(reg.BlobDownloads.Load()).To(Equal(blobs))

	reg.Push(t, "web", "1.2.0", webChart(t, "1.2.0"))
	f.waitAppliedAt("web", "web@1.2.0")
	g.Expect(f.exists(g, &corev1.Service{}, "web-web")).To(BeTrue())
}

func TestHelmRepositoryBadInput(t *testing.T) {
	g := NewWithT(t)
	srv := chartserver.NewRepo(t)
	srv.Username, srv.Password = "ann", "s3cret"
	srv.Add("web", "1.0.0", webChart(t, "1.0.0"))
	big := make([]byte, 11<<20)
	_, _ = rand.Read(big)
	srv.Add("big", "1.0.0", chartserver.Package(t, "big", map[string]string{"Chart.yaml": "apiVersion: v2\nname: big\nversion: 1.0.0\n", "blob.bin": string(big)}))
	srv.Add("escape", "1.0.0", chartserver.PackageRaw(t, "escape/", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: escape\nversion: 1.0.0\n", "../../evil.yaml": "x: 1\n"}))

	// Wrong credentials: the repository says so, its Applications wait, nothing applied.
	f := newHelmFixture(t, srv.URL, map[string][]byte{"username": []byte("ann"), "password": []byte("wrong"), "ca.crt": srv.CA})
	f.chartApp("web", "web", "")
	g.Eventually(func(g Gomega) string {
		ready := apimeta.FindStatusCondition(f.helmRepo(g).Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		return ready.Reason + ": " + ready.Message
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("AuthenticationFailed: GET " + srv.URL + "/index.yaml: 401 Unauthorized"))
	g.Expect(f.waitNotReady("web", gitsyncv1.ArtifactNotReadyReason)).To(ContainSubstring("has no index yet"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "web-web")).To(BeFalse())

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "creds"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("s3cret")
	g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
	f.waitAppliedAt("web", "web@1.0.0")

	cases := []struct{ app, chart, version, reason, msg string }{
		{"missing", "nope", "", gitsyncv1.ChartNotFoundReason, `chart "nope" is not in the repository`},
		{"range", "web", ">=5.0.0", gitsyncv1.ChartNotFoundReason, `no version of chart "web" matches ">=5.0.0" (has 1.0.0)`},
		{"big", "big", "", gitsyncv1.ChartPullFailedReason, "is larger than the 10485760 bytes allowed"},
		{"escape", "escape", "", gitsyncv1.BuildFailedReason, "chart illegally"},
	}
	for _, c := range cases {
		f.chartApp(c.app, c.chart, c.version, func(a *gitsyncv1.Application) { a.Spec.Helm.ReleaseName = "web" })
	}
	for _, c := range cases {
		g.Expect(f.waitNotReady(c.app, c.reason)).To(ContainSubstring(c.msg), c.app)
		g.Expect(f.get(g, c.app).Status.Inventory).To(BeNil(), c.app)
	}
	// Nothing of theirs was applied: web-web is still the web Application's alone.
	g.Expect(f.configMap(g, "web-web").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "web"))
}

func TestHelmRepositoryApplicationNeedsAChart(t *testing.T) {
	g := NewWithT(t)
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "nochart", Namespace: env.Namespace(t)},
		Spec:       gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}},
	}
	err := env.Client.Create(context.Background(), app)
	g.Expect(err).To(MatchError(ContainSubstring("spec.helm.chart is required with a HelmRepository source")))
	bad := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "ftp", Namespace: app.Namespace},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: "ftp://charts.example.com"},
	}
	g.Expect(env.Client.Create(context.Background(), bad)).To(MatchError(ContainSubstring("spec.url")))
}

// A resync of a chart that is in the cache needs neither the repository nor its Secret:
// nothing is downloaded and the Secret is not read (a quiet resync costs no request).
func TestHelmRepositoryResyncUsesTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := chartserver.NewRepo(t)
	srv.Username, srv.Password = "ann", "s3cret"
	srv.Add("web", "1.0.0", webChart(t, "1.0.0"))
	f := newHelmFixture(t, srv.URL, map[string][]byte{"username": []byte("ann"), "password": []byte("s3cret"), "ca.crt": srv.CA})
	f.chartApp("web", "web", "")
	f.waitAppliedAt("web", "web@1.0.0")
	downloads := srv.ChartDownloads.Load() // 0 when another test cached the same archive

	g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: f.ns}})).To(Succeed())
	f.edit(g, "web", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "resync"}
	})
	g.Eventually(func(g Gomega) {
		app := f.get(g, "web")
		g.Expect(app.Status.LastHandledReconcileAt).To(Equal("resync"))
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue(),
			"%v", apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(srv.ChartDownloads.Load()).To(Equal(downloads))
}
