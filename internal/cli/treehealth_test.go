package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// `gitsync tree` judges an object as status.health does: by the Application's CEL check
// (kstatus alone would call this ConfigMap Healthy).
func TestTreeHealthFollowsCELHealthChecks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
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

	r := gitsync(t, "tree", "app", "gated", "-n", ns, "-o", "json")
	g.Expect(r.code).To(Equal(0), r.String())
	var out struct {
		Objects []node `json:"objects"`
	}
	g.Expect(json.Unmarshal([]byte(r.out), &out)).To(Succeed())
	g.Expect(out.Objects).To(HaveLen(1))
	g.Expect(out.Objects[0].Health).To(Equal(app.Status.Health.Status))
	r = gitsync(t, "tree", "app", "gated", "-n", ns)
	g.Expect(r.out).To(ContainSubstring("ConfigMap/" + ns + "/gate (Progressing)"))
}
