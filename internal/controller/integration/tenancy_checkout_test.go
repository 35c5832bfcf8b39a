package integration

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// Tenant B learns the SHA of a commit of tenant A's private repository (statuses and
// events show it). Pointing its own GitRepository (a public URL with ref.commit) or a pin
// at that SHA renders nothing of A's: the checkout belongs to A's repository, B's remote
// does not serve the commit, and a pin names only B's own history.
func TestTenantCannotReadAnotherTenantsCommitBySHA(t *testing.T) {
	g := NewWithT(t)
	private := gittest.NewServer(t, gittest.Options{Username: gitUser, Password: "team-a-s3cret"})
	secretSHA := private.CreateRepo("private").Commit("main", "a's secret", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-a-data}\ndata: {token: only-for-team-a}\n"})
	teamA := env.Namespace(t)
	newGitRepository(t, teamA, "private", private.HTTPURL("private"), nil, "team-a-s3cret")
	waitRevision(t, teamA, "private", "main@sha1:"+secretSHA)

	public := gittest.NewServer(t, gittest.Options{})
	publicSHA := public.CreateRepo("public").Commit("main", "public", map[string]string{"cm.yaml": configMapYAML("b", "public")})
	teamB := env.Namespace(t)

	// A GitRepository of a public URL at A's commit.
	newGitRepository(t, teamB, "stolen", public.HTTPURL("public"), &gitsyncv1.GitRepositoryRef{Commit: secretSHA}, "")
	g.Eventually(func(g Gomega) {
		obj := getRepo(g, teamB, "stolen")
		g.Expect(readyCondition(obj)).NotTo(BeNil())
		g.Expect(readyCondition(obj).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(readyCondition(obj).Reason).To(Equal(gitsyncv1.RefNotFoundReason))
		g.Expect(obj.Status.Artifact).To(BeNil())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())

	// A pin of A's commit on B's own Application.
	newGitRepository(t, teamB, "repo", public.HTTPURL("public"), nil, "")
	f := &appFixture{t: t, ns: teamB}
	f.app("app")
	f.waitApplied("app", publicSHA)
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.PinnedRevision = "main@sha1:" + secretSHA })
	msg := f.waitNotReady("app", gitsyncv1.AccessDeniedReason)
	g.Expect(msg).To(ContainSubstring("not a revision this Application applied"))

	// Nothing of A's reached B's namespace.
	g.Consistently(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "team-a-data") }, 2*time.Second, 200*time.Millisecond).Should(BeFalse())
	for _, e := range eventsFor(g, teamB, "app") {
		g.Expect(strings.Contains(e.Note, "only-for-team-a")).To(BeFalse())
	}
}
