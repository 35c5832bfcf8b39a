package integration

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
)

// An oci:// HelmRepository with cosign keyless: the chart whose manifest has a Sigstore
// bundle by the expected identity under the Secret's trusted root is applied with that
// identity in history; a version signed by another workflow is VerificationFailed and
// the version before stays applied.
func TestVerifyOCIChartCosignKeyless(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sigstore := signing.NewSigstore(t)
	reg := chartserver.NewRegistry(t, "", "")
	sign := func(version, subject string) {
		reg.Push(t, "signed", version, chartserver.Package(t, "signed", chartserver.ConfigMapChart("signed", version)))
		tag, err := name.NewTag(reg.Host + "/charts/signed:" + version)
		g.Expect(err).NotTo(HaveOccurred())
		desc, err := remote.Head(tag)
		g.Expect(err).NotTo(HaveOccurred())
		ref := tag.Context().Digest(desc.Digest.String())
		signing.AttachBundle(t, ref, sigstore.Bundle(t, signing.SignStatement(t, ref.Context().Name(), ref.DigestStr()), subject, keylessIssuer))
	}
	sign("1.0.0", keylessSubject)
	sign("1.1.0", "https://git.example.test/org/web/.ci/nightly.yaml@refs/heads/main")

	f := newHelmFixture(t, reg.URL(), nil)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: f.ns},
		Data: map[string][]byte{"trusted_root.json": sigstore.TrustedRoot(t)}})).To(Succeed())
	repo := f.helmRepo(g)
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Verify = &gitsyncv1.HelmRepositoryVerification{Provider: "cosign", SecretRef: gitsyncv1.LocalObjectReference{Name: "root"},
		MatchOIDCIdentity: []gitsyncv1.OIDCIdentityMatch{{Issuer: `https://ci\.example\.test`, Subject: `https://git\.example\.test/org/web/\.ci/release\.yaml@refs/tags/.*`}}}
	g.Expect(env.Client.Patch(ctx, repo, base)).To(Succeed())

	f.chartApp("app", "signed", "1.0.0")
	app := f.waitAppliedAt("app", "signed@1.0.0")
	g.Expect(app.Status.History[0].Signer).To(Equal(keylessSubject + " (issuer " + keylessIssuer + ")"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Helm.Version = "1.1.0" })
	g.Expect(f.waitNotReady("app", gitsyncv1.VerificationFailedReason)).To(
		And(ContainSubstring("signed@1.1.0"), ContainSubstring("no Sigstore bundle verified")))
	g.Expect(f.configMap(g, "app-settings").Data).To(HaveKeyWithValue("chart", "1.0.0"))
}
