package integration

import (
	"crypto/rand"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A fetch over spec.maxSize is Ready=False and Stalled with reason TooLarge, and the
// API server defaults maxSize to 500Mi; raising the limit fetches.
func TestGitRepositoryMaxSize(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	big := make([]byte, 256<<10)
	_, _ = rand.Read(big)
	head := srv.CreateRepo("big").Commit("main", "big", map[string]string{"big.bin": string(big)})
	newGitRepository(t, ns, "big", srv.HTTPURL("big"), nil, "", func(r *gitsyncv1.GitRepository) {
		limit := resource.MustParse("64Ki")
		r.Spec.MaxSize = &limit
	})
	g.Eventually(func(g Gomega) {
		obj := getRepo(g, ns, "big")
		ready := readyCondition(obj)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(gitsyncv1.TooLargeReason))
		g.Expect(ready.Message).To(ContainSubstring("size limit of 65536 bytes"))
		g.Expect(apimeta.IsStatusConditionTrue(obj.Status.Conditions, gitsyncv1.StalledCondition)).To(BeTrue())
		g.Expect(obj.Status.Artifact).To(BeNil())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())

	editRepo(g, ns, "big", func(r *gitsyncv1.GitRepository) { r.Spec.MaxSize = nil })
	obj := waitRevision(t, ns, "big", "main@sha1:"+head)
	g.Expect(obj.Spec.MaxSize.String()).To(Equal("500Mi"))
}
