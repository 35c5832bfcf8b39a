package application

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"github.com/gitsync-dev/gitsync/internal/apply"
)

func TestReverseWaves(t *testing.T) {
	g := NewWithT(t)
	e := func(id string) apply.Entry { return apply.Entry{ID: id} }
	got := reverseWaves([]apply.Entry{e("a"), e("b"), e("c"), e("d")}, []int{0, 2, -1, 2})
	g.Expect(got).To(Equal([][]apply.Entry{{e("b"), e("d")}, {e("a")}, {e("c")}}))
	g.Expect(reverseWaves(nil, nil)).To(BeEmpty())
}

func TestChangeSummaryFits(t *testing.T) {
	g := NewWithT(t)
	var changes []apply.Change
	for i := range 1000 {
		changes = append(changes, apply.Change{Subject: fmt.Sprintf("ConfigMap/%s/cm-%04d", strings.Repeat("n", 60), i), Action: "created"})
	}
	changes = append(changes, apply.Change{Subject: "Secret/ns/s", Action: "configured"}, apply.Change{Subject: "Secret/ns/u", Action: "unchanged"})
	summary := changeSummary(changes, []apply.Change{{Subject: "ConfigMap/ns/old", Action: "deleted"}})
	g.Expect(len(summary)).To(BeNumerically("<=", maxSummary))
	g.Expect(summary).To(HavePrefix("1 configured, 1000 created, 1 deleted:\n"))
	g.Expect(summary).To(MatchRegexp(`\n… and \d+ more$`))
	g.Expect(summary).NotTo(ContainSubstring("unchanged"))

	small := changeSummary([]apply.Change{{Subject: "ConfigMap/ns/a", Action: "created"}}, nil)
	g.Expect(small).To(Equal("ConfigMap/ns/a created"))
}

// The index does not tie an Application whose cross-namespace source reference is
// refused to the other namespace's source, so that repository's events never enqueue it.
func TestRefusedSourceIsNotIndexed(t *testing.T) {
	g := NewWithT(t)
	borrow := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "borrow", Namespace: "mine"},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: "GitRepository", Name: "repo", Namespace: "other"}}}
	r := &Reconciler{}
	g.Expect(r.sourceIndexKeys(borrow)).To(BeEmpty())
	r.AllowCrossNamespaceRefs = true
	g.Expect(r.sourceIndexKeys(borrow)).To(ConsistOf("other/repo"))
}
