package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// The page lists which images of the application's live objects ImagePolicies of its
// namespace automate: the Deployment's nginx:1.0 matches an ImageRepository of
// docker.io/library/nginx (the same repository, normalized); busybox's policy is not listed.
func TestApplicationListsItsAutomatedImages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	for _, r := range []struct{ repo, image, policy string }{{"nginx", "docker.io/library/nginx", "web-policy"}, {"busybox", "busybox", "other"}} {
		g.Expect(env.Client.Create(ctx, &gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Name: r.repo, Namespace: f.ns},
			Spec: gitsyncv1.ImageRepositorySpec{Image: r.image, Suspend: true}})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Name: r.policy, Namespace: f.ns},
			Spec: gitsyncv1.ImagePolicySpec{ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: r.repo}, Suspend: true,
				Policy: gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: ">=1.0.0"}}}})).To(Succeed())
	}
	srv := startUI(t, env.Config, ui.Options{})

	var d ui.AppDetail
	g.Eventually(func(g Gomega) {
		resp, body := get(t, srv.URL+"/api/apps/"+f.ns+"/web")
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
		g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
		g.Expect(d.Images).To(HaveLen(1))
	}).WithTimeout(20 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())
	g.Expect(d.Images[0].Image).To(Equal("nginx:1.0"))
	g.Expect(d.Images[0].Policy).To(Equal("web-policy"))
	g.Expect(d.Images[0].Repository).To(Equal(f.ns + "/nginx"))
	g.Expect(d.Images[0].Objects).To(Equal([]string{"Deployment/" + f.ns + "/web"}))

	resp, body := get(t, srv.URL+"/apps/"+f.ns+"/web")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`id="images"`))
	g.Expect(body).To(ContainSubstring(`data-image="nginx:1.0" data-policy="web-policy"`))
	g.Expect(body).NotTo(ContainSubstring(`data-policy="other"`))
}
