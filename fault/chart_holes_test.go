package fault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// Issue 34, item 2: --max-timeout reaches HelmRepository downloads. An operator of its own
// with --max-timeout=3s (the shared one keeps the default hour), a HelmRepository whose
// spec.timeout is a year and whose server accepts the connection and never answers: the
// Application fails with a timeout after 3s, the operator stays up, and another
// namespace's Application syncs. It runs alone and first (not parallel, before
// TestSIGKILLDuringApply), while no other operator watches the cluster.
func TestMaxTimeoutCapsChartDownloads(t *testing.T) {
	g := NewWithT(t)
	slow := newStallingCharts(t)
	p := ownOperator(t, "max-timeout", "--max-timeout=3s")

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	ns := env.Namespace(t)
	createHelmRepository(t, ns, "stall", slow.url, 8760*time.Hour, "")
	createChartApp(t, ns, "stall-0-0", "stall", "stall-0-0", "1.0.0")
	other.waitApplied(otherSHA, time.Minute)

	cond := waitChartNotReady(t, ns, "stall-0-0", time.Minute, gitsyncv1.ChartPullFailedReason)
	t.Logf("the stalled chart: %s: %s", cond.Reason, cond.Message)
	g.Expect(cond.Message).To(ContainSubstring("timed out after 3s"))
	sha := other.repo.Commit("main", "revision 1", chartFiles(configMapTemplate("1")))
	other.waitApplied(sha, 20*time.Second)
	exited, err := p.Exited()
	g.Expect(exited).To(BeFalse(), "the operator ended: %v", err)
}

// Issue 34, item 2: chart borrowing by OCI digest. A victim tenant pulls its private chart
// from its own registry (with credentials); the attacker's registry serves manifests that
// name the layer digest of that chart without having the blob, as the chart itself and
// as a dependency of a chart in the attacker's Git repository. The operator stays up,
// the attacker's Applications fail and nothing of the victim's chart reaches the
// attacker's namespace, and another namespace's Application keeps syncing.
func TestChartBorrowingByOCIDigest(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	before := sharedState()

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	other.waitApplied(otherSHA, time.Minute)

	// The victim: a private chart whose ConfigMap holds a secret, in a registry with
	// credentials.
	token := "victim-secret-" + rand.String(12)
	secretChart := chartserver.Package(t, "shop", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\ndata:\n  token: " + token + "\n",
	})
	victimReg := chartserver.NewRegistry(t, "victim", "s3cret-"+rand.String(8))
	victimReg.Push(t, "shop", "1.0.0", secretChart)
	victimNS := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: victimNS},
		Data: map[string][]byte{"username": []byte(victimReg.Username), "password": []byte(victimReg.Password)}})).To(Succeed())
	createHelmRepository(t, victimNS, "charts", victimReg.URL(), time.Minute, "creds")
	createChartApp(t, victimNS, "shop", "charts", "shop", "1.0.0")
	waitChartApplied(t, victimNS, "shop", "shop@1.0.0", time.Minute)
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: victimNS, Name: "shop"}, cm)).To(Succeed())
	g.Expect(cm.Data["token"]).To(Equal(token))

	// The attacker: a registry without credentials whose manifests name the victim's
	// layer digest (read from a status, a lock file or a public manifest), and no blob.
	attackerReg := chartserver.NewRegistry(t, "", "")
	pushManifestNaming(t, attackerReg, "shop", "1.0.0", secretChart)
	attackerNS := env.Namespace(t)
	createHelmRepository(t, attackerNS, "charts", attackerReg.URL(), time.Minute, "")
	createChartApp(t, attackerNS, "shop", "charts", "shop", "1.0.0")
	// The same digest as a dependency of a chart in the attacker's Git repository.
	dep, depSHA := newFixture(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: wrapper\nversion: 0.1.0\ndependencies:\n" +
			"- name: shop\n  version: 1.0.0\n  repository: " + attackerReg.URL() + "\n",
		"templates/main.yaml": configMapTemplate("wrapper"),
	}, time.Second)
	createHelmRepository(t, dep.ns, "charts", attackerReg.URL(), time.Minute, "")

	cond := waitChartNotReady(t, attackerNS, "shop", time.Minute, gitsyncv1.ChartPullFailedReason)
	t.Logf("the attacker's chart: %s: %s", cond.Reason, cond.Message)
	depCond := dep.waitNotReady(depSHA, time.Minute, gitsyncv1.ArtifactNotReadyReason, gitsyncv1.BuildFailedReason)
	t.Logf("the attacker's dependency: %s: %s", depCond.Reason, depCond.Message)
	g.Expect(depCond.Message).To(ContainSubstring("shop"))
	g.Expect(attackerReg.BlobDownloads.Load()).To(BeNumerically(">", 0), "the blob was asked of the attacker's registry")

	// While the attacker's Applications retry, the other tenant's revisions are applied.
	for i := 1; i <= 2; i++ {
		sha := other.repo.Commit("main", fmt.Sprint("revision ", i), chartFiles(configMapTemplate(fmt.Sprint(i))))
		other.waitApplied(sha, 20*time.Second)
	}

	// Nothing of the victim's chart is in the attacker's namespaces: no object, and the
	// token in no condition.
	for _, ns := range []string{attackerNS, dep.ns} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the victim's ConfigMap in %s: %v", ns, err)
		apps := &gitsyncv1.ApplicationList{}
		g.Expect(env.Client.List(ctx, apps, client.InNamespace(ns))).To(Succeed())
		for _, app := range apps.Items {
			g.Expect(app.Status.LastAppliedRevision).To(BeEmpty(), "%s/%s applied something", ns, app.Name)
			for _, c := range app.Status.Conditions {
				g.Expect(c.Message).NotTo(ContainSubstring(token))
			}
		}
	}
	before.expectAlive(g)
}

// Issue 34, item 2: HelmRepository downloads without a deadline. Tenants in three
// namespaces point Applications at a chart server that accepts the connection and then
// never answers (spec.timeout 1h, within the shared operator's --max-timeout), more
// Applications than the operator has workers, and at one that trickles a byte a second
// (spec.timeout 5s). The operator stays up; the stalled Applications say the chart is
// still downloading instead of holding a worker; the trickled ones fail with a timeout,
// and so does a stalled one whose own spec.timeout is 3s; another namespace's
// Application keeps syncing in its normal time.
func TestSlowChartServersHoldNoWorker(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()
	slow := newStallingCharts(t)

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	other.waitApplied(otherSHA, time.Minute)

	type app struct{ ns, name string }
	var stalled, trickled []app
	for i := range 3 {
		ns := env.Namespace(t)
		createHelmRepository(t, ns, "stall", slow.url, time.Hour, "")
		createHelmRepository(t, ns, "trickle", slow.url, 5*time.Second, "")
		for j := range 2 {
			chart := fmt.Sprintf("stall-%d-%d", i, j)
			createChartApp(t, ns, chart, "stall", chart, "1.0.0")
			stalled = append(stalled, app{ns, chart})
		}
		chart := fmt.Sprintf("trickle-%d", i)
		createChartApp(t, ns, chart, "trickle", chart, "1.0.0")
		trickled = append(trickled, app{ns, chart})
	}
	// The Application's own timeout bounds its downloads too.
	short := app{stalled[0].ns, "stall-0-2"}
	createChartApp(t, short.ns, short.name, "stall", short.name, "1.0.0", func(a *gitsyncv1.Application) {
		a.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	g.Eventually(slow.archiveRequests).WithTimeout(time.Minute).WithPolling(pollInterval).
		Should(BeNumerically(">=", 4), "the stalled downloads began")

	// While the downloads stall, the other tenant's revisions are applied.
	for i := 1; i <= 3; i++ {
		sha := other.repo.Commit("main", fmt.Sprint("revision ", i), chartFiles(configMapTemplate(fmt.Sprint(i))))
		begin := time.Now()
		other.waitApplied(sha, 20*time.Second)
		t.Logf("the other tenant's revision %d applied in %v", i, time.Since(begin).Round(100*time.Millisecond))
	}

	for _, a := range trickled {
		cond := waitChartNotReady(t, a.ns, a.name, time.Minute, gitsyncv1.ChartPullFailedReason)
		g.Expect(cond.Message).To(ContainSubstring("timed out after 5s"), "%s/%s", a.ns, a.name)
	}
	cond := waitChartNotReady(t, short.ns, short.name, time.Minute, gitsyncv1.ChartPullFailedReason)
	g.Expect(cond.Message).To(ContainSubstring("timed out after 3s"))
	for _, a := range stalled {
		NewWithT(t).Eventually(func(g Gomega) {
			cond := readyOf(g, a.ns, a.name)
			g.Expect(cond.Status).To(Equal(metav1.ConditionUnknown), "%s: %s", cond.Reason, cond.Message)
			g.Expect(cond.Message).To(ContainSubstring(chartrepo.ErrInProgress.Error()))
		}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(Succeed(), "%s/%s", a.ns, a.name)
	}
	before.expectAlive(g)
}

// pushManifestNaming stores at reg's charts/<chart>:<tag> a chart manifest whose layer is
// archive's digest, without uploading the blob (nor the config).
func pushManifestNaming(t *testing.T, reg *chartserver.Registry, chart, tag string, archive []byte) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(archive, chartrepo.ChartLayerMediaType))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	ref, err := name.ParseReference(reg.Host + "/charts/" + chart + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(ref, img); err != nil {
		t.Fatal(err)
	}
}

// createHelmRepository creates a HelmRepository (secret: the name of its Secret, or "")
// and suspends it when the test ends.
func createHelmRepository(t *testing.T, ns, repoName, url string, timeout time.Duration, secret string) {
	t.Helper()
	repo := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: repoName, Namespace: ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: url, Timeout: &metav1.Duration{Duration: timeout},
			Interval: &metav1.Duration{Duration: time.Minute}},
	}
	if secret != "" {
		repo.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: secret}
	}
	if err := env.Client.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		base := client.MergeFrom(repo.DeepCopy())
		repo.Spec.Suspend = true
		_ = env.Client.Patch(context.Background(), repo, base)
	})
}

// createChartApp creates an Application of a HelmRepository's chart and suspends it when
// the test ends.
func createChartApp(t *testing.T, ns, appName, repoName, chart, version string, mutate ...func(*gitsyncv1.Application)) {
	t.Helper()
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: repoName},
			Helm:      &gitsyncv1.HelmSpec{Chart: chart, Version: version},
			Prune:     true,
		},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := env.Client.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		base := client.MergeFrom(app.DeepCopy())
		app.Spec.Suspend = true
		_ = env.Client.Patch(context.Background(), app, base)
	})
}

func readyOf(g Gomega, ns, appName string) *metav1.Condition {
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: appName}, app)).To(Succeed())
	cond := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(cond).NotTo(BeNil(), "no Ready condition yet")
	return cond
}

func waitChartApplied(t *testing.T, ns, appName, revision string, timeout time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: appName}, app)).To(Succeed())
		cond := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision), "Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed())
}

func waitChartNotReady(t *testing.T, ns, appName string, timeout time.Duration, reasons ...string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		cond = readyOf(g, ns, appName)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%s: %s", cond.Reason, cond.Message)
		g.Expect(reasons).To(ContainElement(cond.Reason), cond.Message)
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed(), "%s/%s", ns, appName)
	return cond
}

// stallingCharts is a chart repository over HTTP whose index.yaml answers at once and
// lists any chart asked for: the archives of charts named stall-* are never answered (the
// request is accepted and held until the test ends), those of trickle-* send their
// headers and then a byte a second.
type stallingCharts struct {
	url   string
	stop  chan struct{}
	mu    sync.Mutex
	count int // archive requests
}

func newStallingCharts(t *testing.T) *stallingCharts {
	s := &stallingCharts{stop: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop)
		srv.CloseClientConnections()
		srv.Close()
	})
	s.url = srv.URL
	return s
}

func (s *stallingCharts) archiveRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// stallingDigest is what the index says a chart's archive hashes to (never sent).
func stallingDigest(chart string) string {
	sum := sha256.Sum256([]byte(chart))
	return hex.EncodeToString(sum[:])
}

func (s *stallingCharts) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/index.yaml" {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nentries:\n")
		for i := range 3 {
			for _, chart := range []string{fmt.Sprintf("stall-%d-0", i), fmt.Sprintf("stall-%d-1", i), fmt.Sprintf("stall-%d-2", i), fmt.Sprintf("trickle-%d", i)} {
				fmt.Fprintf(&b, "  %s:\n  - {apiVersion: v2, name: %s, version: 1.0.0, digest: %s, urls: [%s-1.0.0.tgz]}\n",
					chart, chart, stallingDigest(chart), chart)
			}
		}
		_, _ = io.WriteString(w, b.String())
		return
	}
	s.mu.Lock()
	s.count++
	s.mu.Unlock()
	if strings.HasPrefix(req.URL.Path, "/trickle-") {
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Second):
			case <-req.Context().Done():
				return
			case <-s.stop:
				return
			}
		}
	}
	select {
	case <-req.Context().Done():
	case <-s.stop:
	}
}
