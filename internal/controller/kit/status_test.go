package kit

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// Progress is written only for a step that outlasts the patcher's delay: a fast step
// writes status once, at its end; a slow one shows its progress meanwhile, and the final
// write follows it (no conflict, no metadata write, the progress gone, another writer's
// edit kept).
func TestProgressIsWrittenOnlyForSlowSteps(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	counter, c, err := apicount.NewClient(env.Config, env.Scheme)
	g.Expect(err).NotTo(HaveOccurred())
	// Suspended: the suite's controller leaves it to this test.
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: "https://example.com/r.git", Suspend: true},
	})).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "r"}
	server := func(g Gomega) *gitsyncv1.GitRepository {
		obj := &gitsyncv1.GitRepository{}
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		return obj
	}
	writes := func(since map[string]int) map[string]int { // the repository's, not discovery
		out := map[string]int{}
		for k, v := range counter.DetailSince(since) {
			if strings.Contains(k, "gitrepositories") {
				out[k] = v
			}
		}
		return out
	}
	step := func(delay time.Duration) (*gitsyncv1.GitRepository, *mergePatcher) {
		obj := server(g)
		p := NewStatusPatcher(obj, c)
		p.delay = delay
		conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "fetching")
		p.PatchSoon(ctx, obj)
		return obj, p
	}
	finish := func(obj *gitsyncv1.GitRepository, p *mergePatcher, msg string) {
		conditions.Delete(obj, gitsyncv1.ReconcilingCondition)
		conditions.MarkTrue(obj, gitsyncv1.ReadyCondition, gitsyncv1.SucceededReason, "%s", msg)
		g.Expect(PatchStatus(ctx, p, obj, []string{gitsyncv1.ReadyCondition, gitsyncv1.ReconcilingCondition, gitsyncv1.StalledCondition}, true)).To(Succeed())
	}

	// Fast: one write.
	before := counter.DetailSnapshot()
	obj, p := step(300 * time.Millisecond)
	finish(obj, p, "fast")
	time.Sleep(600 * time.Millisecond) // past the delay: nothing more goes out
	g.Expect(writes(before)).To(Equal(map[string]int{"patch gitrepositories/status": 1}))
	g.Expect(apimeta.FindStatusCondition(server(g).Status.Conditions, gitsyncv1.ReconcilingCondition)).To(BeNil())

	// Slow: the progress shows, then the result replaces it.
	before = counter.DetailSnapshot()
	obj, p = step(100 * time.Millisecond)
	g.Eventually(func(g Gomega) *metav1.Condition {
		return apimeta.FindStatusCondition(server(g).Status.Conditions, gitsyncv1.ReconcilingCondition)
	}).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(BeNil())
	// Someone else edits the object meanwhile (a webhook's request): the writes that
	// follow must not undo it, nor conflict with the resourceVersion it moved.
	g.Expect(env.Client.Patch(ctx, &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"gitsync.dev/requested-at":"now"}}}`)))).To(Succeed())
	// A second step's progress shows too.
	conditions.MarkReconciling(obj, gitsyncv1.ProgressingReason, "checking out")
	p.PatchSoon(ctx, obj)
	g.Eventually(func(g Gomega) string {
		c := apimeta.FindStatusCondition(server(g).Status.Conditions, gitsyncv1.ReconcilingCondition)
		g.Expect(c).NotTo(BeNil())
		return c.Message
	}).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("checking out"))
	obj.Status.Artifact = &gitsyncv1.Artifact{Revision: "main@sha1:0123456789012345678901234567890123456789", LastUpdateTime: metav1.Now()}
	finish(obj, p, "slow")
	got := server(g)
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, gitsyncv1.ReconcilingCondition)).To(BeNil())
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, gitsyncv1.ReadyCondition).Message).To(Equal("slow"))
	g.Expect(got.Status.Artifact).NotTo(BeNil())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(got.Annotations).To(HaveKeyWithValue("gitsync.dev/requested-at", "now"))
	g.Expect(writes(before)).To(Equal(map[string]int{"patch gitrepositories/status": 3}))
}

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }
