package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// celApp creates an Application of one ConfigMap that a CEL health check judges
// Progressing (kstatus would call it Healthy), and waits until status.health says so.
func celApp(t *testing.T) (ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns = env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	repo.Commit("main", "first", map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gate\ndata:\n  ready: \"no\"\n",
	})
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-repo", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app")},
	})).To(Succeed())
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path:      "./app",
			HealthChecks: []gitsyncv1.HealthCheck{{APIVersion: "v1", Kind: "ConfigMap",
				Current: "data.ready == 'yes'", InProgress: "data.ready != 'yes'"}},
		},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(app.Status.Health).NotTo(BeNil())
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusProgressing))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return ns
}

// The UI's tree judges an object as status.health does: by the Application's CEL check.
func TestTreeHealthFollowsCELHealthChecks(t *testing.T) {
	g := NewWithT(t)
	ns := celApp(t)
	srv := startUI(t, env.Config, ui.Options{})
	g.Eventually(func(g Gomega) {
		resp, body := get(t, srv.URL+"/api/apps/"+ns+"/gated")
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		var d ui.AppDetail
		g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
		n := findNode(d.Tree, "ConfigMap/"+ns+"/gate")
		g.Expect(n).NotTo(BeNil())
		g.Expect(n.Health).To(Equal(gitsyncv1.HealthStatusProgressing), "status.health says Progressing")
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
