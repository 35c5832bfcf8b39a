package image_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/imagereg"
)

// TestTenThousandTagsKeepStatusSmall: 10,000 tags are listed and chosen from; status
// holds the count and ten tags, not the list.
func TestTenThousandTagsKeepStatusSmall(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	reg := imagereg.New(t, "", "")
	tags := make([]string, 10_000)
	for i := range tags {
		tags[i] = fmt.Sprintf("main-%05d", i)
	}
	reg.Push(t, "big", tags...)
	create(t,
		&gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}, Spec: gitsyncv1.ImageRepositorySpec{
			Image: reg.Image("big"), Insecure: true}},
		&gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}, Spec: gitsyncv1.ImagePolicySpec{
			ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "big"},
			FilterTags:         &gitsyncv1.TagFilter{Pattern: `^main-(?P<n>\d+)$`, Extract: "$n"},
			Policy:             gitsyncv1.ImagePolicyChoice{Numerical: &gitsyncv1.OrderPolicy{Order: "asc"}}}},
	)
	repo := &gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}}
	g.Eventually(func(g Gomega) int {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		if repo.Status.LastScanResult == nil {
			return 0
		}
		return repo.Status.LastScanResult.TagCount
	}, wait, poll).Should(Equal(10_000))
	g.Expect(repo.Status.LastScanResult.LatestTags).To(HaveLen(10))
	raw, err := json.Marshal(repo.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(raw)).To(BeNumerically("<", 2048), "status stays small: %s", raw)

	policy := &gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}}
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(policy), policy)).To(Succeed())
		if policy.Status.LatestRef == nil {
			return ""
		}
		return policy.Status.LatestRef.Tag
	}, wait, poll).Should(Equal("main-09999"))
}
