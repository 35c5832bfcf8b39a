// Package apps creates, for tests of several packages, Applications in a known state
// against a real API server and an in-process Git server.
package apps

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// CELGated creates, in ns, the Application "gated" of one ConfigMap "gate" that its CEL
// health check judges Progressing (kstatus alone would call it Healthy), and waits (an
// operator must run) until status.health says so.
func CELGated(t testing.TB, c client.Client, ns string) *gitsyncv1.Application {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	repo.Commit("main", "first", map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gate\ndata:\n  ready: \"no\"\n",
	})
	g.Expect(c.Create(ctx, &gitsyncv1.GitRepository{
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
	g.Expect(c.Create(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(app.Status.Health).NotTo(BeNil())
		g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusProgressing))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return app
}
