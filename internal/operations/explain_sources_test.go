package operations_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// explain of an Application of spec.sources reads and describes every source: a
// GitRepository that is Ready, an OCIRepository that is not, and one that does not
// exist (a source listed twice is read once).
func TestExplainDescribesEverySource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	git := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://git.example.com/shop.git"}}
	g.Expect(env.Client.Create(ctx, git)).To(Succeed())
	git.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
		Message: "stored", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, git)).To(Succeed())
	oci := &gitsyncv1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "manifests", Namespace: ns},
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://registry.example.com/manifests"}}
	g.Expect(env.Client.Create(ctx, oci)).To(Succeed())
	oci.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: gitsyncv1.FetchFailedReason,
		Message: "registry answered 503", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, oci)).To(Succeed())

	src := func(kind, name, path string) gitsyncv1.ApplicationSource {
		return gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: kind, Name: name}, Path: path}
	}
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{
			src(gitsyncv1.GitRepositoryKind, "shop", "./a"), src(gitsyncv1.OCIRepositoryKind, "manifests", ""),
			src(gitsyncv1.GitRepositoryKind, "shop", "./b"), src(gitsyncv1.GitRepositoryKind, "gone", ""),
		}}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())

	e := operations.ExplainApp(ctx, env.Client, app)
	g.Expect(e.Source).To(BeNil())
	g.Expect(e.Sources).To(HaveLen(3))
	g.Expect(e.Sources[0]).To(And(HaveField("Kind", gitsyncv1.GitRepositoryKind), HaveField("Name", "shop"), HaveField("Ready", "True")))
	g.Expect(e.Sources[1]).To(And(HaveField("Kind", gitsyncv1.OCIRepositoryKind), HaveField("Name", "manifests"), HaveField("Ready", "False")))
	g.Expect(e.Sources[2]).To(And(HaveField("Kind", gitsyncv1.GitRepositoryKind), HaveField("Name", "gone"), HaveField("Error", ContainSubstring("not found"))))
	g.Expect(e.Reasons).To(ContainElements(
		"source OCIRepository "+ns+"/manifests is not Ready (FetchFailed): registry answered 503",
		ContainSubstring("source GitRepository "+ns+"/gone cannot be read"),
	))
	g.Expect(e.Reasons).NotTo(ContainElement(ContainSubstring("source GitRepository " + ns + "/shop")))

	// With spec.sourceRef, the one source, an OCIRepository read as one.
	single := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "single", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.OCIRepositoryKind, Name: "manifests"}}}
	g.Expect(env.Client.Create(ctx, single)).To(Succeed())
	e = operations.ExplainApp(ctx, env.Client, single)
	g.Expect(e.Sources).To(BeEmpty())
	g.Expect(e.Source).To(PointTo(And(HaveField("Kind", gitsyncv1.OCIRepositoryKind), HaveField("Ready", "False"))))
}
