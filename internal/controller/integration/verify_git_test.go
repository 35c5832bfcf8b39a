package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
)

// A GitRepository with spec.verify: only commits signed by a key of its Secret are ever
// applied. An unsigned commit and one signed by another key leave Ready=False
// (VerificationFailed, naming the commit), the previous artifact in status and the
// cluster as it was; the next signed commit is applied, and its signer is in the
// source's status.artifact and in the Application's history.
func TestVerifyGitOpenPGP(t *testing.T) {
	key := signing.OpenPGP(t, "Release Bot", "release@example.com")
	other := signing.OpenPGP(t, "Mallory", "mallory@example.com")
	testVerifiedCommits(t, key, other, "openpgp:"+key.Fingerprint+" (Release Bot <release@example.com>)")
}

func TestVerifyGitSSH(t *testing.T) {
	key := signing.SSH(t, "release@example.com")
	other := signing.SSH(t, "mallory@example.com")
	testVerifiedCommits(t, key, other, "ssh:"+key.Fingerprint+" (release@example.com)")
}

func testVerifiedCommits(t *testing.T, key, other *signing.Key, wantSigner string) {
	g := NewWithT(t)
	ctx := context.Background()
	f := &appFixture{t: t, ns: env.Namespace(t), srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("app")
	f.repo.Commit("main", "unsigned initial", map[string]string{"cm.yaml": configMapYAML("a", "1")})
	signed1 := signing.CommitOnBranch(t, f.repo.Path(), "main", key, "signed one\n")

	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "signers", Namespace: f.ns},
		Data:       map[string][]byte{"keys": key.Public},
	})).To(Succeed())
	newGitRepository(t, f.ns, "repo", f.srv.HTTPURL("app"), nil, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Verify = &gitsyncv1.GitRepositoryVerification{Mode: gitsyncv1.VerifyModeHEAD,
			SecretRef: gitsyncv1.LocalObjectReference{Name: "signers"}}
	})
	f.app("app")
	app := f.waitApplied("app", signed1)
	g.Expect(app.Status.History).NotTo(BeEmpty())
	g.Expect(app.Status.History[0].Signer).To(Equal(wantSigner))
	g.Expect(getRepo(g, f.ns, "repo").Status.Artifact.Signer).To(Equal(wantSigner))

	// Unsigned, then signed by a key the Secret does not hold: refused, nothing applied.
	unsigned := f.repo.Commit("main", "unsigned two", map[string]string{"cm.yaml": configMapYAML("a", "2")})
	f.waitVerificationFailed(unsigned, "is not signed", "main@sha1:"+signed1)
	byOther := signing.CommitOnBranch(t, f.repo.Path(), "main", other, "other key\n")
	f.waitVerificationFailed(byOther, "", "main@sha1:"+signed1)
	g.Consistently(func(g Gomega) string { return f.configMap(g, "a").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("1"))

	// The next signed commit (the same tree as the refused ones) is applied.
	signed2 := signing.CommitOnBranch(t, f.repo.Path(), "main", key, "signed two\n")
	app = f.waitApplied("app", signed2)
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("2"))
	g.Expect(app.Status.History[0].Signer).To(Equal(wantSigner))
	for _, h := range app.Status.History {
		g.Expect(h.Revision).NotTo(ContainSubstring(unsigned), "an unsigned commit was synced")
		g.Expect(h.Revision).NotTo(ContainSubstring(byOther), "a commit signed by another key was synced")
	}
}

// waitVerificationFailed waits until the fixture's GitRepository refuses commit (Ready=False,
// VerificationFailed, the message naming the commit and saying want) while its artifact
// stays at kept.
func (f *appFixture) waitVerificationFailed(commit, want, kept string) {
	f.t.Helper()
	NewWithT(f.t).Eventually(func(g Gomega) {
		repo := getRepo(g, f.ns, "repo")
		ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(gitsyncv1.VerificationFailedReason), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring(commit))
		g.Expect(ready.Message).To(ContainSubstring(want))
		g.Expect(repo.Status.Artifact.Revision).To(Equal(kept))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}
