package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// An Application on another Cluster is attested too: its objects are read where they
// were applied, the record stays beside the Application, and `gitsync verify app`
// compares the objects on that cluster.
func TestAttestationOfAnApplicationOnAnotherCluster(t *testing.T) {
	g := NewWithT(t)
	remote := startRemote(t)
	ns := env.Namespace(t)
	newKeySecret(t, ns, "attest-key")
	remote.namespace(t, ns)
	remote.register(t, ns, "remote")
	f, sha := newAppFixtureIn(t, ns, map[string]string{"cm.yaml": configMapYAML("cfg", "one")})
	f.app("app", onCluster("remote"), func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{attestKeyAnnotation: "attest-key"}
		a.Spec.SelfHeal = ptr.To(false)
	})
	f.waitApplied("app", sha)
	g.Eventually(func(g Gomega) string {
		app := f.get(g, "app")
		g.Expect(app.Status.History).NotTo(BeEmpty())
		return app.Status.History[0].Attestation
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HavePrefix("sha256:"))
	g.Expect(f.attestations(g, "app").BinaryData).To(HaveLen(1), "kept beside the Application")

	res := gitsyncCLI(t, "verify", "app", "app", "-n", ns, "--key-secret", ns+"/attest-key")
	g.Expect(res.code).To(Equal(0), res.out)

	// An edit on the remote cluster is what verify finds.
	cm := remote.configMap(g, ns, "cfg")
	cm.Data["value"] = "edited"
	g.Expect(remote.client.Update(context.Background(), cm)).To(Succeed())
	res = gitsyncCLI(t, "verify", "app", "app", "-n", ns, "--key-secret", ns+"/attest-key")
	g.Expect(res.code).To(Equal(1), res.out)
	g.Expect(res.out).To(ContainSubstring("/v1/ConfigMap/" + ns + "/cfg"))
}
