package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// The artifact GC keeps the artifact an Application last applied through spec.sources
// (its second source an OCIRepository that has moved on to a broken artifact), as it
// does for spec.sourceRef; drift protection restored from that artifact (a restart)
// still corrects an edit.
func TestOCIArtifactOfOneOfSeveralSourcesIsKeptByGC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := chartserver.NewRegistry(t, "", "")
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{"cm.yaml": configMapYAML("web", "one")})
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "one")})
	g.Expect(env.Client.Create(ctx, &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "oci", Namespace: f.ns},
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://" + reg.Host + "/manifests/web", Ref: &gitsyncv1.OCIRepositoryRef{SemVer: ">=1.0.0"},
			Interval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	})).To(Succeed())
	f.app("multi", withSources(gitSource("repo"),
		gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.OCIRepositoryKind, Name: "oci"}}))
	art := waitOCIRevision(t, f.ns, "1.0.0")
	applied := "GitRepository/repo@main@sha1:" + sha + ";OCIRepository/oci@" + art.Revision
	f.waitAppliedAt("multi", applied)
	dir := sourceid.OCICheckoutDir(ociArtifacts, ociRepo(g, f.ns), art.Digest)
	g.Expect(dir).To(BeADirectory())

	// The source moves on to an artifact that does not build: the Application stays at 1.0.0.
	pushArtifact(t, reg.Host, "1.1.0", map[string]string{"cm.yaml": "kind: [unclosed"})
	waitOCIRevision(t, f.ns, "1.1.0")
	g.Expect(f.waitNotReady("multi", gitsyncv1.BuildFailedReason)).To(ContainSubstring("sources[1] (OCIRepository/oci)"))

	keep, err := sources.OCIArtifactsInUse(ctx, env.Client, ociArtifacts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keep).To(HaveKey(dir))
	// Collect with nothing else of the suite at stake: every other stored artifact is kept.
	entries, err := os.ReadDir(filepath.Dir(dir))
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		if p := filepath.Join(filepath.Dir(dir), e.Name()); p != dir {
			keep[p] = true
		}
	}
	_, err = ociArtifacts.GC(keep, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(BeADirectory(), "the GC removed the artifact the Application last applied")

	// What a restart loses; a resync restores drift protection from the kept artifact.
	key := types.NamespacedName{Namespace: f.ns, Name: "multi"}
	driftReconciler.Desired.Forget(ctx, key)
	app := f.get(g, "multi")
	base := client.MergeFrom(app.DeepCopy())
	gitsyncv1.RequestReconcile(app, time.Now())
	g.Expect(env.Client.Patch(ctx, app, base)).To(Succeed())
	g.Eventually(func() bool { return driftReconciler.Desired.Tracked(key) }).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())
	f.setValue(g, "web", "edited")
	g.Eventually(func(g Gomega) string { return f.configMap(g, "web").Data["value"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("one"))
	g.Expect(f.get(g, "multi").Status.LastAppliedRevision).To(Equal(applied))
}
