package cli

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/imagereg"
)

// TestReconcileAndGetImages: `reconcile image repository` scans now and prints the
// outcome; `get images` lists the repository and the policy with the image it chose.
func TestReconcileAndGetImages(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	reg := imagereg.New(t, "", "")
	reg.Push(t, "app", "1.0.0", "1.2.0", "2.0.0")
	repo := &gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: gitsyncv1.ImageRepositorySpec{Image: reg.Image("app"), Insecure: true}}
	policy := &gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gitsyncv1.ImagePolicySpec{
		ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "app"},
		Policy:             gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: "^1.0"}}}}
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), policy)).To(Succeed())

	res := gitsync(t, "reconcile", "image", "repository", "app", "-n", ns)
	g.Expect(res.code).To(Equal(0), res.String())
	g.Expect(res.out).To(ContainSubstring("found 3 tags"), res.String())

	g.Eventually(func() string {
		return gitsync(t, "get", "images", "-n", ns).out
	}, "30s", "200ms").Should(ContainSubstring(reg.Image("app") + ":1.2.0"))
	out := gitsync(t, "get", "images", "-n", ns).out
	g.Expect(strings.Count(out, "\n")).To(Equal(3), "a header, the repository and the policy:\n%s", out)

	res = gitsync(t, "reconcile", "image", "update", "missing", "-n", ns)
	g.Expect(res.code).NotTo(Equal(0), res.String())
	res = gitsync(t, "reconcile", "image", "nonsense", "app", "-n", ns)
	g.Expect(res.code).NotTo(Equal(0), res.String())
}
