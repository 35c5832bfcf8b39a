package application

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// With sharding, an OCIRepository pulled by another shard's replica has its artifact on
// that replica's disk: an Application of this replica pulls it itself, by digest; the
// owner's replica waits for its own pull instead.
func TestOCIRepositoryOfAnotherShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	reg := chartserver.NewRegistry(t, "", "")
	content := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(content, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), 0o644)).To(Succeed())
	pusher, err := oci.New("", oci.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := pusher.Push(ctx, oci.PushRequest{URL: "oci://" + reg.Host + "/manifests/web:1.0.0", Dir: content})
	g.Expect(err).NotTo(HaveOccurred())
	digest := pushed[len(pushed)-71:]

	repo := &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       gitsyncv1.OCIRepositorySpec{URL: "oci://" + reg.Host + "/manifests/web", Ref: &gitsyncv1.OCIRepositoryRef{Tag: "1.0.0"}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	// As the owning replica's pull leaves it.
	repo.Status.Artifact = &gitsyncv1.OCIArtifact{Revision: "1.0.0@" + digest, Digest: digest, URL: reg.Host + "/manifests/web:1.0.0", LastUpdateTime: metav1.Now()}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: gitsyncv1.ApplicationSpec{
		SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.OCIRepositoryKind, Name: "web"},
	}}

	other, _ := shard.Parse("0/2")
	if other.Owns(repo) {
		other, _ = shard.Parse("1/2")
	}
	mine, err := oci.New(t.TempDir(), oci.Options{}) // this replica's disk: no artifact
	g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{Client: env.Client, APIReader: env.Client, Artifacts: mine, Shard: other}
	s := &syncRun{app: app}
	out := r.reconcileOCISource(ctx, s)
	g.Expect(out.kind).To(Equal(outcome{}.kind), "%s: %s", out.reason, out.message)
	g.Expect(s.revision).To(Equal("1.0.0@" + digest))
	g.Expect(filepath.Join(s.dir, "cm.yaml")).To(BeARegularFile())
	g.Expect(reg.BlobDownloads.Load()).To(BeNumerically(">", 0))

	owner, _ := shard.Parse("0/2")
	if !owner.Owns(repo) {
		owner, _ = shard.Parse("1/2")
	}
	empty, err := oci.New(t.TempDir(), oci.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	r = &Reconciler{Client: env.Client, APIReader: env.Client, Artifacts: empty, Shard: owner}
	out = r.reconcileOCISource(ctx, &syncRun{app: app})
	g.Expect(out.reason).To(Equal(gitsyncv1.ArtifactNotReadyReason))
	g.Expect(out.message).To(ContainSubstring("asked"))
}
