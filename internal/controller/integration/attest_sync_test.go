package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/attest"
)

// attestedApp makes an Application (selfHeal off, so that an edit stays) of a
// Deployment and a ConfigMap whose syncs are signed with the key of Secret attest-key,
// and waits for its first attested sync; it returns the fixture and the public key.
func attestedApp(t *testing.T, mutate ...func(*gitsyncv1.Application)) (*appFixture, []byte) {
	t.Helper()
	g := NewWithT(t)
	ns := env.Namespace(t)
	pub := newKeySecret(t, ns, "attest-key")
	f, sha := newAppFixtureIn(t, ns, map[string]string{"deploy.yaml": deploymentYAML, "cm.yaml": configMapYAML("cfg", "one")})
	f.app("app", append([]func(*gitsyncv1.Application){func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{attestKeyAnnotation: "attest-key"}
		a.Spec.SelfHeal = ptr.To(false)
	}}, mutate...)...)
	f.waitApplied("app", sha)
	g.Eventually(func(g Gomega) string {
		app := f.get(g, "app")
		g.Expect(app.Status.History).NotTo(BeEmpty())
		return app.Status.History[0].Attestation
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HavePrefix("sha256:"))
	return f, pub
}

// attestations reads the ConfigMap that keeps the Application's attestations.
func (f *appFixture) attestations(g Gomega, app string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: attest.ConfigMapName(app)}, cm)).To(Succeed())
	return cm
}

func TestAttestationWrittenPerSyncAndVerified(t *testing.T) {
	g := NewWithT(t)
	f, pub := attestedApp(t)
	app := f.get(g, "app")
	first := app.Status.History[0]

	// Kept in the Application's ConfigMap, owned by it; its signature, revision and
	// subjects are the sync's.
	cm := f.attestations(g, "app")
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", app.UID)))
	envelope, err := attest.Find(cm, first.Attestation)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := attest.ParsePublicKey(pub)
	g.Expect(err).NotTo(HaveOccurred())
	parsed, err := attest.Verify(context.Background(), key, envelope)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parsed.Predicate.Revision).To(Equal(first.Revision))
	g.Expect(parsed.Predicate.Application).To(Equal(attest.Ref{Namespace: f.ns, Name: "app"}))
	g.Expect(parsed.Subjects).To(HaveKey("apps/v1/Deployment/" + f.ns + "/web"))
	g.Expect(parsed.Subjects).To(HaveKey("/v1/ConfigMap/" + f.ns + "/cfg"))

	res := gitsyncCLI(t, "verify", "app", "app", "-n", f.ns, "--key-secret", f.ns+"/attest-key")
	g.Expect(res.code).To(Equal(0), res.out)
	g.Expect(res.out).To(ContainSubstring("2 objects match the attestation"))
	g.Expect(res.out).To(ContainSubstring(first.Revision))

	// A new revision: a new attestation, the ConfigMap keeps both.
	sha := f.repo.Commit("main", "two", map[string]string{"cm.yaml": configMapYAML("cfg", "two")})
	f.waitApplied("app", sha)
	g.Eventually(func(g Gomega) string { return f.get(g, "app").Status.History[0].Attestation }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(And(HavePrefix("sha256:"), Not(Equal(first.Attestation))))
	g.Expect(f.attestations(g, "app").BinaryData).To(HaveLen(2))
	res = gitsyncCLI(t, "verify", "app", "app", "-n", f.ns, "--key", writeFile(t, "cosign.pub", pub))
	g.Expect(res.code).To(Equal(0), res.out)

	// An edit (selfHeal off, so it stays) is named by field and writer: exit 1.
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, deploy)).To(Succeed())
	editAs(g, "kubectl-edit", deploy, func() { deploy.Spec.Template.Spec.Containers[0].Image = "nginx:edited" })
	res = gitsyncCLI(t, "verify", "app", "app", "-n", f.ns, "--key-secret", f.ns+"/attest-key")
	g.Expect(res.code).To(Equal(1), res.out)
	g.Expect(res.out).To(ContainSubstring("apps/v1/Deployment/" + f.ns + "/web"))
	g.Expect(res.out).To(ContainSubstring("/spec/template/spec/containers/name=web/image (written by kubectl-edit)"))
	g.Expect(res.out).NotTo(ContainSubstring("ConfigMap/" + f.ns + "/cfg:"))
	g.Expect(res.out).NotTo(ContainSubstring("nginx:edited"))
}

func TestAttestationForgedIsRefused(t *testing.T) {
	g := NewWithT(t)
	f, _ := attestedApp(t)
	app := f.get(g, "app")

	// Trusting another key: refused (exit 1), nothing listed as verified.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	otherPEM, err := attest.EncryptPrivateKey(other, []byte("x"))
	g.Expect(err).NotTo(HaveOccurred())
	otherKey, err := attest.ParsePrivateKey(otherPEM, []byte("x"))
	g.Expect(err).NotTo(HaveOccurred())
	otherPub, err := otherKey.MarshalPublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	res := gitsyncCLI(t, "verify", "app", "app", "-n", f.ns, "--key", writeFile(t, "other.pub", otherPub))
	g.Expect(res.code).To(Equal(1), res.out)
	g.Expect(res.out).To(ContainSubstring("attestation refused"))
	g.Expect(res.out).NotTo(ContainSubstring("verified"))

	// A tenant who may write ConfigMaps puts in an attestation of the same revision,
	// signed with its own key: it is never taken for gitsync's.
	envelope, _, err := attest.Make(context.Background(), otherKey, attest.Sync{
		Application: attest.Ref{Namespace: f.ns, Name: "app"}, Revision: app.Status.History[0].Revision})
	g.Expect(err).NotTo(HaveOccurred())
	cm := f.attestations(g, "app")
	cm.BinaryData = nil
	g.Expect(attest.Add(cm, envelope)).To(Succeed())
	g.Expect(env.Client.Update(context.Background(), cm)).To(Succeed())
	res = gitsyncCLI(t, "verify", "app", "app", "-n", f.ns, "--key-secret", f.ns+"/attest-key")
	g.Expect(res.code).To(Equal(1), res.out)
	g.Expect(res.out).To(ContainSubstring("attestation refused"))
	key, err := attest.ParsePublicKey(newKeyPublic(g, f.ns))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = attest.Verify(context.Background(), key, envelope)
	g.Expect(errors.Is(err, attest.ErrForged)).To(BeTrue(), "%v", err)
}

func TestAttestationFailureDoesNotUndoTheSync(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("cfg", "one")})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{attestKeyAnnotation: "no-such-secret"}
	})
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.History[0].Result).To(Equal(gitsyncv1.SyncResultSucceeded))
	g.Expect(app.Status.History[0].Attestation).To(BeEmpty())
	g.Expect(f.configMap(g, "cfg").Data["value"]).To(Equal("one"))
	g.Eventually(func(g Gomega) []string {
		var reasons []string
		for _, e := range eventsFor(g, f.ns, "app") {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(gitsyncv1.AttestationFailedReason))
}

// newKeyPublic reads cosign.pub of the namespace's attest-key Secret.
func newKeyPublic(g Gomega, ns string) []byte {
	s := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "attest-key"}, s)).To(Succeed())
	return s.Data[attest.SecretPublicKey]
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// In tenant mode the record is written as the Application's service account (the
// operator's least-privilege role writes no ConfigMaps): one that may apply Secrets but
// not write ConfigMaps syncs, and its attestation fails, saying so.
func TestAttestationWrittenAsTheApplicationsIdentity(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	newKeySecret(t, ns, "attest-key")
	f, sha := newAppFixtureIn(t, ns, map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n"})
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	f.app("app", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{attestKeyAnnotation: "attest-key"}
		a.Spec.ServiceAccountName = "deployer"
	})
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.History[0].Attestation).To(BeEmpty())
	g.Eventually(func(g Gomega) []string {
		var notes []string
		for _, e := range eventsFor(g, ns, "app") {
			if e.Reason == gitsyncv1.AttestationFailedReason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElement(
		ContainSubstring("system:serviceaccount:" + ns + ":deployer")))
}
