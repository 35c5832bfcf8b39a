package integration

import (
	"context"
	"testing"
	"time"

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

// A HelmRepository with spec.verify: a chart whose .prov is signed by a key of the keyring
// is applied and its signer recorded in history; a tampered archive (its .prov states
// another digest) and a chart without a .prov are refused (VerificationFailed), and
// nothing of them is applied.
func TestVerifyHelmProvenance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := signing.OpenPGP(t, "Charts", "charts@example.com")

	srv := chartserver.NewRepo(t)
	good := chartserver.ConfigMapChart("signed", "1.0.0")
	archive := chartserver.Package(t, "signed", good)
	srv.Add("signed", "1.0.0", archive)
	srv.AddProvenance("signed", "1.0.0", signing.Provenance(t, key, archive, "signed-1.0.0.tgz", good["Chart.yaml"]))
	// 1.1.0: its .prov signs the genuine archive, the repository serves another one.
	genuine := chartserver.ConfigMapChart("signed", "1.1.0")
	tampered := chartserver.ConfigMapChart("signed", "1.1.0")
	tampered["values.yaml"] = "greeting: tampered\n"
	srv.Add("signed", "1.1.0", chartserver.Package(t, "signed", tampered))
	srv.AddProvenance("signed", "1.1.0", signing.Provenance(t, key, chartserver.Package(t, "signed", genuine), "signed-1.1.0.tgz", genuine["Chart.yaml"]))
	srv.Add("plain", "1.0.0", chartserver.Package(t, "plain", chartserver.ConfigMapChart("plain", "1.0.0")))

	f := newHelmFixture(t, srv.URL, map[string][]byte{"ca.crt": srv.CA})
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keyring", Namespace: f.ns},
		Data: map[string][]byte{"keyring.asc": key.Public}})).To(Succeed())
	repo := f.helmRepo(g)
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Verify = &gitsyncv1.HelmRepositoryVerification{SecretRef: gitsyncv1.LocalObjectReference{Name: "keyring"}}
	g.Expect(env.Client.Patch(ctx, repo, base)).To(Succeed())
	g.Expect(f.helmRepo(g).Spec.Verify.Provider).To(Equal("helm"), "the default provider")

	f.chartApp("app", "signed", "1.0.0")
	app := f.waitAppliedAt("app", "signed@1.0.0")
	g.Expect(app.Status.History[0].Signer).To(Equal("helm:" + key.Fingerprint + " (Charts <charts@example.com>)"))
	g.Expect(f.configMap(g, "app-settings").Data).To(HaveKeyWithValue("chart", "1.0.0"))

	// The tampered archive: refused, the cluster keeps 1.0.0.
	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Helm.Version = "1.1.0" })
	g.Expect(f.waitNotReady("app", gitsyncv1.VerificationFailedReason)).To(
		And(ContainSubstring("signed@1.1.0"), ContainSubstring("sha256 sum does not match")))
	g.Consistently(func(g Gomega) map[string]string { return f.configMap(g, "app-settings").Data }).
		WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(HaveKeyWithValue("greeting", "hello"))
	g.Expect(f.get(g, "app").Status.LastAppliedRevision).To(Equal("signed@1.0.0"))

	// No provenance file at all: refused, nothing applied.
	f.chartApp("plain", "plain", "")
	g.Expect(f.waitNotReady("plain", gitsyncv1.VerificationFailedReason)).To(ContainSubstring("no provenance file"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "plain-settings")).To(BeFalse())
}

// An oci:// HelmRepository with verify.provider cosign: the chart whose manifest is signed
// by the Secret's key is applied with its signer in history; an unsigned version is
// refused and nothing of it applied. A provider that does not fit the URL is refused by
// the API server.
func TestVerifyOCIChartCosign(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := signing.NewCosignKey(t)
	reg := chartserver.NewRegistry(t, "", "")
	reg.Push(t, "signed", "1.0.0", chartserver.Package(t, "signed", chartserver.ConfigMapChart("signed", "1.0.0")))
	reg.Push(t, "signed", "1.1.0", chartserver.Package(t, "signed", chartserver.ConfigMapChart("signed", "1.1.0")))
	tag, err := name.NewTag(reg.Host + "/charts/signed:1.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Head(tag)
	g.Expect(err).NotTo(HaveOccurred())
	signing.Cosign(t, tag.Context().Digest(desc.Digest.String()), key, desc.Digest.String())

	f := newHelmFixture(t, reg.URL(), nil)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign", Namespace: f.ns},
		Data: map[string][]byte{"cosign.pub": key.Public}})).To(Succeed())
	repo := f.helmRepo(g)
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Verify = &gitsyncv1.HelmRepositoryVerification{Provider: "cosign", SecretRef: gitsyncv1.LocalObjectReference{Name: "cosign"}}
	g.Expect(env.Client.Patch(ctx, repo, base)).To(Succeed())

	f.chartApp("app", "signed", "1.0.0")
	app := f.waitAppliedAt("app", "signed@1.0.0")
	g.Expect(app.Status.History[0].Signer).To(Equal("cosign:" + key.Fingerprint + " (cosign.pub)"))

	f.edit(g, "app", func(a *gitsyncv1.Application) { a.Spec.Helm.Version = "1.1.0" })
	g.Expect(f.waitNotReady("app", gitsyncv1.VerificationFailedReason)).To(
		And(ContainSubstring("signed@1.1.0"), ContainSubstring("has no cosign signature")))
	g.Expect(f.configMap(g, "app-settings").Data).To(HaveKeyWithValue("chart", "1.0.0"))

	for _, tc := range []struct{ url, provider string }{{"https://charts.example.com", "cosign"}, {reg.URL(), "helm"}} {
		bad := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: f.ns}, Spec: gitsyncv1.HelmRepositorySpec{
			URL: tc.url, Verify: &gitsyncv1.HelmRepositoryVerification{Provider: tc.provider, SecretRef: gitsyncv1.LocalObjectReference{Name: "cosign"}}}}
		g.Expect(env.Client.Create(ctx, bad, client.DryRunAll)).To(MatchError(ContainSubstring("verify.provider helm")), "%s with %s", tc.url, tc.provider)
	}
}
