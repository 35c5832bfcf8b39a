package fault

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// smallRevision is a revision of a few objects, with data naming the revision.
func smallRevision(rev string, names ...string) desired {
	d := desired{configMaps: map[string]map[string]string{}, services: map[string]int32{"web": 80}}
	for _, n := range names {
		d.configMaps[n] = map[string]string{"revision": rev}
	}
	return d
}

// TestGitServerDown stops the Git server for three polling intervals: nothing is pruned or
// changed, the GitRepository says Ready=False with a clear reason, the Application keeps
// its objects; once the server is back a new commit is applied.
func TestGitServerDown(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	const interval = 2 * time.Second
	good := smallRevision("a", "one", "two", "three")
	f, sha := newFixture(t, good.files(), interval)
	f.waitApplied(sha, time.Minute)
	g := NewWithT(t)
	f.checkWorld(g, good)

	f.srv.Stop()
	down := time.Now()
	var sawNotReady bool
	var reason, message string
	for time.Since(down) < 3*interval+interval/2 {
		// Every moment of the outage: the objects are all there, unchanged, and the
		// Application still says what it last applied.
		f.checkWorld(g, good)
		app := f.app(g)
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision(sha)))
		g.Expect(inventoryIDs(app)).To(Equal(good.inventory(f.ns)))
		repo := f.gitRepository(g)
		g.Expect(repo.Status.Artifact).NotTo(BeNil(), "the last artifact is kept")
		g.Expect(repo.Status.Artifact.Revision).To(Equal(revision(sha)), "the last artifact is kept")
		if c := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
			sawNotReady, reason, message = true, c.Reason, c.Message
		}
		time.Sleep(pollInterval)
	}
	g.Expect(sawNotReady).To(BeTrue(), "the GitRepository never said Ready=False in 3 intervals without its server")
	g.Expect(reason).To(Equal(gitsyncv1.FetchFailedReason), message)
	g.Expect(message).To(ContainSubstring("127.0.0.1"), "the message names the server it could not reach")
	t.Logf("GitRepository while the server was down: Ready=False %s: %s", reason, message)

	// Back up: a new commit (changing one object, removing one, adding one) is applied.
	f.srv.Start()
	next := smallRevision("b", "one", "two", "four")
	nextSHA := f.repo.Commit("main", "after the outage", next.files())
	recovered := time.Now()
	f.waitApplied(nextSHA, time.Minute)
	f.checkWorld(g, next)
	g.Eventually(func(g Gomega) {
		c := apimeta.FindStatusCondition(f.gitRepository(g).Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).WithTimeout(30 * time.Second).WithPolling(pollInterval).Should(Succeed())
	t.Logf("after the server came back, the next commit was applied in %s", time.Since(recovered).Round(time.Millisecond))
}
