package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// `get sources` lists OCIRepositories beside the other sources (ocirepository/NAME, its
// revision), `get ocirepo NAME` and `get source NAME` find one.
func TestGetSourcesListsOCIRepositories(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	repo := &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "manifests", Namespace: ns},
		// Suspended: the operator of the suite leaves the status written here alone.
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://registry.example.com/team/web", Ref: &gitsyncv1.OCIRepositoryRef{SemVer: ">=1.0.0"},
			Suspend: true},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	revision := "1.2.0@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	repo.Status.Artifact = &gitsyncv1.OCIArtifact{Revision: revision, Digest: revision[len("1.2.0@"):],
		URL: "registry.example.com/team/web:1.2.0", LastUpdateTime: metav1.Now()}
	repo.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: gitsyncv1.SucceededReason, Message: "stored artifact", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, repo)).To(Succeed())

	r := gitsync(t, "get", "sources", "-n", ns, "-o", "wide")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^ocirepository/manifests\s+True\s+` + revision))
	g.Expect(r.out).To(ContainSubstring("oci://registry.example.com/team/web"))
	g.Expect(r.out).To(ContainSubstring(">=1.0.0"))
	g.Expect(r.out).To(ContainSubstring("suspended"))

	r = gitsync(t, "get", "ocirepo", "manifests", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring(revision))

	r = gitsync(t, "get", "source", "manifests", "-n", ns, "-o", "name")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(Equal("ocirepository.gitsync.dev/manifests\n"))
}

// `push artifact`, then `reconcile ocirepo NAME` waits for the pull and prints the revision.
func TestPushArtifactThenReconcileOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	reg := chartserver.NewRegistry(t, "", "")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"), 0o644)).To(Succeed())
	r := gitsync(t, "push", "artifact", "oci://"+reg.Host+"/manifests/web:1.0.0", "--path", dir, "--source", "https://git.example.com/web", "--revision", "v1")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("pushed " + reg.Host + "/manifests/web:1.0.0@sha256:"))
	digest := strings.TrimSpace(strings.TrimPrefix(r.out, "pushed "+reg.Host+"/manifests/web:1.0.0@"))

	r = gitsync(t, "push", "artifact", "oci://"+reg.Host+"/manifests/web", "--path", dir)
	g.Expect(r.code).NotTo(Equal(0), "a push without a tag")
	r = gitsync(t, "push", "artifact", "oci://"+reg.Host+"/manifests/web:1.0.1")
	g.Expect(r.code).NotTo(Equal(0), "a push without --path")
	g.Expect(r.err).To(ContainSubstring("path"))

	repo := &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       gitsyncv1.OCIRepositorySpec{URL: "oci://" + reg.Host + "/manifests/web", Ref: &gitsyncv1.OCIRepositoryRef{Tag: "1.0.0"}},
	}
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())
	r = gitsync(t, "reconcile", "ocirepo", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("OCIRepository " + ns + "/web: revision 1.0.0@" + digest))
}
