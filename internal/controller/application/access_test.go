package application

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// An Application refused with AccessDenied (its sourceRef names another namespace) is
// never rendered, by its own sync or by another Application's ownership and prune
// checks, nor is its last applied revision read back: otherwise tenant B asks, through
// a sibling's prune or apply, whether tenant A's private repository renders an object
// at a path (an oracle on A's code). With the cross-namespace flag on, the same checks
// do render it (the control: the refusal is what changes the answers).
func TestRefusedApplicationIsNeverRendered(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenantA, tenantB := env.Namespace(t), env.Namespace(t)

	// Tenant A's private repository, fetched into the operator's storage.
	srv := gittest.NewServer(t, gittest.Options{})
	commit := srv.CreateRepo("private").Commit("main", "a's secret layout", map[string]string{
		"internal/probe.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  k: v\n",
	})
	storage, err := source.NewFetcher(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: tenantA},
		Spec: gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("private")}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	req, err := sourceid.GitRequest(ctx, env.Client, repo, source.Ref{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	artifact, err := storage.Fetch(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Commit).To(Equal(commit))
	repo.Status.Artifact = &gitsyncv1.Artifact{Revision: artifact.Revision, Digest: artifact.Digest, LastUpdateTime: metav1.Now()}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())

	// Tenant B: "spy" names A's repository and guesses a path; "x" is an ordinary
	// Application of B's namespace whose prune and apply consult its siblings.
	spy := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "spy", Namespace: tenantB}, Spec: gitsyncv1.ApplicationSpec{
		SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "private", Namespace: tenantA},
		Path:      "internal",
	}}
	g.Expect(env.Client.Create(ctx, spy)).To(Succeed())
	spy.Status.LastAppliedRevision = artifact.Revision
	g.Expect(env.Client.Status().Update(ctx, spy)).To(Succeed())
	x := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: tenantB}, Spec: gitsyncv1.ApplicationSpec{
		SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "mine"},
	}}
	g.Expect(env.Client.Create(ctx, x)).To(Succeed())

	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion("v1")
	probe.SetKind("ConfigMap")
	probe.SetNamespace(tenantB)
	probe.SetName("probe")
	id := apply.EntryOf(probe).ID

	reconciler := func(allow bool) *Reconciler {
		return &Reconciler{Client: env.Client, APIReader: env.Client, Mapper: env.Client.RESTMapper(), Storage: storage,
			AllowCrossNamespaceRefs: allow}
	}

	r := reconciler(false)
	_, err = r.renderCurrent(ctx, spy)
	var refused *accessError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "renderCurrent of a refused Application: %v", err)
	claimed, err := r.pruneOptions(x, nil).Claimed(ctx, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).To(BeFalse(), "x's prune was held back by a render of tenant A's repository")
	released, err := r.ownerReleased(x)(ctx, client.ObjectKeyFromObject(spy), id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(released).To(BeTrue(), "the refused Application kept an object only tenant A's repository renders")
	_, atHand := r.lastAppliedAtHand(ctx, spy)
	g.Expect(atHand).To(BeFalse(), "the restore would render tenant A's checkout for the refused Application")

	// The control: allowed, the same checks render A's repository and answer otherwise.
	r = reconciler(true)
	objs, err := r.renderCurrent(ctx, spy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	claimed, err = r.pruneOptions(x, nil).Claimed(ctx, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).To(BeTrue())
	released, err = r.ownerReleased(x)(ctx, client.ObjectKeyFromObject(spy), id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(released).To(BeFalse())
	_, atHand = r.lastAppliedAtHand(ctx, spy)
	g.Expect(atHand).To(BeTrue())
}
