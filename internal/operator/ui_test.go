package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// freeAddress is a loopback address with a port nothing listens on now.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The operator's web UI diffs an object against what the operator last applied: no Git
// fetch per request (counted on the Git server), and the diff shows a live edit.
func TestOperatorUIDiffMakesNoFetch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	repo.Commit("main", "one", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata: {value: hello}\n"})
	ns := env.Namespace(t)
	addr := freeAddress(t)
	mgr, err := New(env.Config, env.Scheme, Options{
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: t.TempDir(), SkipNameValidation: true,
		DenyEgress: NoEgressGuard, UIBindAddress: addr,
	})
	g.Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(func() { cleanUp(t, ns) })

	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Interval: &metav1.Duration{Duration: 10 * time.Minute}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app"},
			SelfHeal: new(bool)},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

	// The UI authenticates every request (TokenReview) and answers with the caller's
	// rights: a ServiceAccount that may read the Application and ConfigMaps of ns.
	url := fmt.Sprintf("http://%s/api/apps/%s/app/object?id=ConfigMap/%s/greeting", addr, ns, ns)
	g.Eventually(func(g Gomega) {
		resp, err := http.Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	token := viewerToken(t, ns)

	srv.ResetCounts()
	object := func(g Gomega) ui.ObjectView {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		var view ui.ObjectView
		g.Expect(json.Unmarshal(body, &view)).To(Succeed())
		return view
	}
	var view ui.ObjectView
	g.Eventually(func(g Gomega) { view = object(g) }).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(view.Note).To(BeEmpty())
	g.Expect(view.Action).To(Equal("unchanged"))
	g.Expect(view.Git).To(ContainSubstring("value: hello"))

	// A live edit (self-heal is off): the diff shows it, still without a fetch.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		view = object(g)
		g.Expect(view.Action).To(Equal("configured"))
		g.Expect(view.Fields).To(ConsistOf("/data/value"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(srv.Counts("app")).To(Equal(gittest.Counts{}), "no ref listing, no fetch for a UI diff")
}

// viewerToken is a token of a ServiceAccount of ns that may read Applications and
// ConfigMaps there.
func viewerToken(t *testing.T, ns string) string {
	t.Helper()
	read := []string{"get", "list", "watch"}
	token, _ := env.ServiceAccountToken(t, ns, "viewer",
		rbacv1.PolicyRule{APIGroups: []string{gitsyncv1.GroupVersion.Group}, Resources: []string{"applications"}, Verbs: read},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read})
	return token
}
