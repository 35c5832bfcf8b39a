package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// build appset prints the Applications a set generates; diff appset says what its
// controller would create, and nothing once it did; rollback and resume appset write
// the set's spec.rollback and resume request.
func TestAppSetCommands(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("fleet")
	sha := repo.Commit("main", "first", map[string]string{"apps/web/cm.yaml": configMapYAML, "apps/api/cm.yaml": configMapYAML})
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("fleet"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		repo := &gitsyncv1.GitRepository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Suspend: true, // the controller waits: diff shows the creations first
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "fleet"}, Include: []string{"apps/*"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "{{ .path.basename }}"},
				Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "fleet"},
					Path: "{{ .path.path }}", Suspend: true},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	r := gitsync(t, "build", "appset", "fleet", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(strings.Count(r.out, "kind: Application\n")).To(Equal(2), r.out)
	g.Expect(r.out).To(And(ContainSubstring("name: api\n"), ContainSubstring("path: apps/web\n"),
		ContainSubstring(gitsyncv1.ApplicationSetLabel+": fleet")))

	r = gitsync(t, "diff", "appset", "fleet", "-n", ns)
	g.Expect(r.code).To(Equal(ExitChanges), r.String())
	g.Expect(r.out).To(And(ContainSubstring("+ create Application api"), ContainSubstring("+ create Application web"),
		ContainSubstring("2 to change, 0 unchanged")))

	base := client.MergeFrom(set.DeepCopy())
	set.Spec.Suspend = false
	g.Expect(env.Client.Patch(ctx, set, base)).To(Succeed())
	g.Eventually(func() string { return gitsync(t, "diff", "appset", "fleet", "-n", ns).out }).
		WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(ContainSubstring("0 to change, 2 unchanged"))

	r = gitsync(t, "rollback", "appset", "fleet", "--to", "main@sha1:"+sha, "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("pinned to main@sha1:" + sha))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	g.Expect(set.Spec.Rollback).To(Equal("main@sha1:" + sha))
	r = gitsync(t, "rollback", "appset", "fleet", "--to", "main", "-n", ns)
	g.Expect(r.code).NotTo(Equal(0), "a revision that names no commit is refused")

	r = gitsync(t, "resume", "appset", "fleet", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	g.Expect(set.Annotations).To(HaveKey(gitsyncv1.ResumeRolloutAnnotation))
}
