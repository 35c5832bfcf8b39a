package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
)

const (
	keylessIssuer  = "https://ci.example.test"
	keylessSubject = "https://git.example.test/org/web/.ci/release.yaml@refs/tags/v1.0.0"
)

// keylessVerify makes the Secret "root" with the trusted root and sets spec.verify to
// cosign keyless with identity.
func keylessVerify(g Gomega, trustedRoot []byte, identity gitsyncv1.OIDCIdentityMatch) func(*gitsyncv1.OCIRepository) {
	return func(r *gitsyncv1.OCIRepository) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: r.Namespace}, Data: map[string][]byte{"trusted_root.json": trustedRoot}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
		r.Spec.Verify = &gitsyncv1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &gitsyncv1.LocalObjectReference{Name: "root"},
			MatchOIDCIdentity: []gitsyncv1.OIDCIdentityMatch{identity}}
	}
}

// waitOCINotReady waits until the OCIRepository is Ready=False with reason, and returns
// it.
func waitOCINotReady(t *testing.T, ns, reason string) *gitsyncv1.OCIRepository {
	t.Helper()
	var repo *gitsyncv1.OCIRepository
	NewWithT(t).Eventually(func(g Gomega) {
		repo = ociRepo(g, ns)
		ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return repo
}

// spec.verify with cosign keyless and a private Sigstore's trusted root: an artifact with
// a Sigstore bundle (attached as a referrer, as cosign v3 does) by the expected OIDC
// identity syncs with that identity as its signer, in status and in the Application's
// history; with an identity that does not match, the OCIRepository is
// VerificationFailed and its Application applies nothing.
func TestOCIRepositoryCosignKeyless(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "", "")
	sigstore := signing.NewSigstore(t)
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{"cm.yaml": configMapYAML("web", "one")})
	signed := digestOf(t, reg.Host, "1.0.0")
	signing.AttachBundle(t, signed, sigstore.Bundle(t, signing.SignStatement(t, signed.Context().Name(), signed.DigestStr()), keylessSubject, keylessIssuer))

	f := newOCIFixture(t, reg.Host, ">=1.0.0", keylessVerify(g, sigstore.TrustedRoot(t), gitsyncv1.OIDCIdentityMatch{
		Issuer: `https://ci\.example\.test`, Subject: `https://git\.example\.test/org/web/\.ci/release\.yaml@refs/tags/v.*`}))
	art := waitOCIRevision(t, f.ns, "1.0.0")
	wantSigner := keylessSubject + " (issuer " + keylessIssuer + ")"
	g.Expect(art.Signer).To(Equal(wantSigner))
	app := f.waitAppliedAt("web", art.Revision)
	g.Expect(app.Status.History).NotTo(BeEmpty())
	g.Expect(app.Status.History[0].Signer).To(Equal(wantSigner))
	g.Expect(f.configMap(g, "web").Data["value"]).To(Equal("one"))

	// The same signed artifact, another identity expected (another workflow).
	wrong := newOCIFixture(t, reg.Host, ">=1.0.0", keylessVerify(g, sigstore.TrustedRoot(t), gitsyncv1.OIDCIdentityMatch{
		Issuer: `https://ci\.example\.test`, Subject: `https://git\.example\.test/org/web/\.ci/nightly\.yaml@.*`}))
	repo := waitOCINotReady(t, wrong.ns, gitsyncv1.VerificationFailedReason)
	g.Expect(apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition).Message).To(ContainSubstring("SAN"))
	g.Expect(repo.Status.Artifact).To(BeNil())
	g.Expect(wrong.waitNotReady("web", gitsyncv1.VerificationFailedReason)).To(ContainSubstring("1.0.0"))
	g.Expect(wrong.exists(g, &corev1.ConfigMap{}, "web")).To(BeFalse())

	// The API server refuses an identity with notation.
	bad := &gitsyncv1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: f.ns},
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://" + reg.Host + "/manifests/web", Verify: &gitsyncv1.OCIRepositoryVerification{
			Provider: "notation", SecretRef: &gitsyncv1.LocalObjectReference{Name: "root"},
			MatchOIDCIdentity: []gitsyncv1.OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}}}}
	g.Expect(env.Client.Create(context.Background(), bad)).To(MatchError(ContainSubstring("matchOIDCIdentity is for provider cosign")))
}

// A change of the verification Secret verifies an artifact whose digest did not move
// again: signed with key A and verified, then the Secret holds only key B →
// VerificationFailed; back to key A → Ready again.
func TestOCIRepositoryVerifiesAgainWhenTheSecretChanges(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "", "")
	keyA, keyB := signing.NewCosignKey(t), signing.NewCosignKey(t)
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{"cm.yaml": configMapYAML("web", "one")})
	signed := digestOf(t, reg.Host, "1.0.0")
	signing.Cosign(t, signed, keyA, signed.DigestStr())
	f := newOCIFixture(t, reg.Host, ">=1.0.0", func(r *gitsyncv1.OCIRepository) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: r.Namespace}, Data: map[string][]byte{"cosign.pub": keyA.Public}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
		r.Spec.Verify = &gitsyncv1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &gitsyncv1.LocalObjectReference{Name: "keys"}}
	})
	art := waitOCIRevision(t, f.ns, "1.0.0")
	g.Expect(art.Signer).To(ContainSubstring(keyA.Fingerprint))
	g.Expect(art.VerificationSecretVersion).NotTo(BeEmpty())
	f.waitAppliedAt("web", art.Revision)

	setKey := func(public []byte) {
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "keys"}, s)).To(Succeed())
		s.Data = map[string][]byte{"cosign.pub": public}
		g.Expect(env.Client.Update(context.Background(), s)).To(Succeed())
	}
	setKey(keyB.Public)
	repo := waitOCINotReady(t, f.ns, gitsyncv1.VerificationFailedReason)
	g.Expect(apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition).Message).To(ContainSubstring(signed.DigestStr()))
	g.Expect(repo.Status.Artifact.Digest).To(Equal(art.Digest))

	setKey(keyA.Public)
	g.Eventually(func(g Gomega) {
		repo := ociRepo(g, f.ns)
		ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(repo.Status.Artifact.VerificationSecretVersion).NotTo(Equal(art.VerificationSecretVersion))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}
