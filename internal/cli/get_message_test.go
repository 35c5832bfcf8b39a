package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A Ready message of 29 lines (one per object that failed to apply) is one line of the
// table: its first line, cut with "…" when long, and "(+28 lines)"; -o yaml keeps all
// of it.
func TestGetShowsTheFirstLineOfALongMessage(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	repo := &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "sock-shop", Namespace: ns},
		// Suspended: the operator of the suite leaves the status written here alone.
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://registry.example.com/team/sock-shop", Suspend: true},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	lines := []string{"apply failed for 29 objects: " + strings.Repeat("x", 200)}
	for i := 1; i < 29; i++ {
		lines = append(lines, fmt.Sprintf("apps/v1/Deployment sock-shop/svc-%02d: field is immutable", i))
	}
	repo.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: "ApplyFailed", Message: strings.Join(lines, "\n"), LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())

	r := gitsync(t, "get", "sources", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	out := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	g.Expect(out).To(HaveLen(2), r.String())
	g.Expect(out[1]).To(HavePrefix("ocirepository/sock-shop"))
	g.Expect(out[1]).To(ContainSubstring("apply failed for 29 objects: xxx"))
	g.Expect(out[1]).To(HaveSuffix("x… (+28 lines)"))
	g.Expect(out[1]).NotTo(ContainSubstring(strings.Repeat("x", 200)))

	r = gitsync(t, "get", "ocirepo", "sock-shop", "-n", ns, "-o", "yaml")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring(strings.Repeat("x", 200)))
	g.Expect(r.out).To(ContainSubstring("sock-shop/svc-28: field is immutable"))
}

// messageCell keeps a short one-line message as it is.
func TestMessageCell(t *testing.T) {
	g := NewWithT(t)
	g.Expect(messageCell("stored artifact")).To(Equal("stored artifact"))
	g.Expect(messageCell("a\nb\nc\n")).To(Equal("a (+2 lines)"))
	g.Expect(messageCell(strings.Repeat("é", 150))).To(Equal(strings.Repeat("é", messageCellWidth-1) + "…"))
}
