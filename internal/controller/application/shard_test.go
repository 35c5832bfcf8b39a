package application

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// env is an API server with no controller running: the tests here call the
// reconciler's steps themselves (the controllers' behaviour is tested in
// internal/controller/integration).
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// With sharding, a HelmRepository polled by another shard's replica has its index on that
// replica's disk: an Application of this replica reads the index itself.
func TestHelmRepositoryOfAnotherShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := chartserver.NewRepo(t)
	srv.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, Data: map[string][]byte{"ca.crt": srv.CA}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	repo := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: srv.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "creds"}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	// As the owning replica's poll leaves it: an index this replica's disk does not hold.
	repo.Status.Artifact = &gitsyncv1.Artifact{Revision: "sha256:0123", Digest: "sha256:0123", LastUpdateTime: metav1.Now()}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())

	mine, err := shard.Parse("0/2")
	g.Expect(err).NotTo(HaveOccurred())
	if mine.Owns(repo) {
		mine, _ = shard.Parse("1/2")
	}
	store, err := chartrepo.New(t.TempDir()) // this replica's disk: no index
	g.Expect(err).NotTo(HaveOccurred())
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: gitsyncv1.ApplicationSpec{
		SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
		Helm:      &gitsyncv1.HelmSpec{Chart: "web"},
	}}
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Charts: store, Shard: mine}
	loc, err := r.resolveChart(ctx, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loc.msg).To(BeEmpty())
	g.Expect(loc.revision).To(Equal("web@1.0.0"))

	// The replica that owns the repository waits for its own poll instead.
	owner, _ := shard.Parse("0/2")
	if !owner.Owns(repo) {
		owner, _ = shard.Parse("1/2")
	}
	empty, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	r = &Reconciler{Client: env.Client, APIReader: env.Client, Charts: empty, Shard: owner}
	loc, err = r.resolveChart(ctx, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loc.reason).To(Equal(gitsyncv1.ArtifactNotReadyReason))
}
