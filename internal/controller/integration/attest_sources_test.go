package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/attest"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
)

// The attestation of a sync of two sources, the second a verified GitRepository: the
// predicate lists both sources, each with its path, its own revision and its verified
// signer; `gitsync verify app` verifies it and prints them.
func TestAttestationOfSeveralSources(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	pub := newKeySecret(t, ns, "attest-key")
	f, sha1 := newAppFixtureIn(t, ns, map[string]string{"cm.yaml": configMapYAML("cfg", "one")})
	key := signing.SSH(t, "release@example.com")
	signer := "ssh:" + key.Fingerprint + " (release@example.com)"
	second := f.srv.CreateRepo("second")
	second.Commit("main", "unsigned initial", map[string]string{"extra/b.yaml": configMapYAML("b", "one")})
	sha2 := signing.CommitOnBranch(t, second.Path(), "main", key, "signed\n")
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "signers", Namespace: ns},
		Data:       map[string][]byte{"keys": key.Public},
	})).To(Succeed())
	newGitRepository(t, ns, "second", f.srv.HTTPURL("second"), nil, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Verify = &gitsyncv1.GitRepositoryVerification{Mode: gitsyncv1.VerifyModeHEAD,
			SecretRef: gitsyncv1.LocalObjectReference{Name: "signers"}}
	})
	extra := gitSource("second")
	extra.Path = "./extra"
	f.app("app", withSources(gitSource("repo"), extra), func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{attestKeyAnnotation: "attest-key"}
	})
	rev := "GitRepository/repo@main@sha1:" + sha1 + ";GitRepository/second@main@sha1:" + sha2
	f.waitAppliedAt("app", rev)
	var digest string
	g.Eventually(func(g Gomega) string {
		app := f.get(g, "app")
		g.Expect(app.Status.History).NotTo(BeEmpty())
		digest = app.Status.History[0].Attestation
		return digest
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HavePrefix("sha256:"))

	envelope, err := attest.Find(f.attestations(g, "app"), digest)
	g.Expect(err).NotTo(HaveOccurred())
	trusted, err := attest.ParsePublicKey(pub)
	g.Expect(err).NotTo(HaveOccurred())
	parsed, err := attest.Verify(context.Background(), trusted, envelope)
	g.Expect(err).NotTo(HaveOccurred())
	p := parsed.Predicate
	g.Expect(p.Revision).To(Equal(rev))
	g.Expect(p.Source).To(BeZero())
	g.Expect(p.Sources).To(Equal([]attest.Source{
		{SourceRef: attest.SourceRef{Kind: gitsyncv1.GitRepositoryKind, Namespace: ns, Name: "repo"}, Path: "./", Revision: "main@sha1:" + sha1},
		{SourceRef: attest.SourceRef{Kind: gitsyncv1.GitRepositoryKind, Namespace: ns, Name: "second"}, Path: "./extra",
			Revision: "main@sha1:" + sha2, Signer: signer},
	}))
	g.Expect(p.Signer).To(Equal(signer))
	g.Expect(parsed.Subjects).To(HaveKey("/v1/ConfigMap/" + ns + "/cfg"))
	g.Expect(parsed.Subjects).To(HaveKey("/v1/ConfigMap/" + ns + "/b"))

	res := gitsyncCLI(t, "verify", "app", "app", "-n", ns, "--key-secret", ns+"/attest-key")
	g.Expect(res.code).To(Equal(0), res.out)
	g.Expect(res.out).To(ContainSubstring("2 objects match the attestation"))
	g.Expect(res.out).To(ContainSubstring("source GitRepository/" + ns + "/repo path ./ at main@sha1:" + sha1 + "\n"))
	g.Expect(res.out).To(ContainSubstring("source GitRepository/" + ns + "/second path ./extra at main@sha1:" + sha2 + ", signed by " + signer))
}
