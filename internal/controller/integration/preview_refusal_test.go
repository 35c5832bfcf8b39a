package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

const badDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  replicas: three
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec:
      containers: [{name: c, image: nginx}]
`

const tenantBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tenant-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: deployer, namespace: default}]
`

// A pull request with a schema-invalid object fails the status with the API server's
// message; one that adds a ClusterRoleBinding to a tenant's Application (its service
// account may manage ConfigMaps only) names the refusal by RBAC in the comment; the
// cluster is left as it was.
func TestPreviewReportsRefusals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newPreviewFixture(t, map[string]string{
		"plain/cm.yaml":  configMapYAML("plain", "1"),
		"tenant/cm.yaml": configMapYAML("tenant", "1"),
	})
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}})).To(Succeed())
	grantConfigMaps(t, f.ns, "deployer")
	f.app("plain", func(a *gitsyncv1.Application) { a.Spec.Path = "plain" })
	f.app("tenant", func(a *gitsyncv1.Application) {
		a.Spec.Path = "tenant"
		a.Spec.ServiceAccountName = "deployer"
	})
	f.waitApplied("plain", sha)
	f.waitApplied("tenant", sha)
	before := f.versions(g)

	head := f.repo.Commit("bad", "bad change", map[string]string{
		"plain/deploy.yaml": badDeployment,
		"plain/cm.yaml":     configMapYAML("plain", "2"),
		"tenant/crb.yaml":   tenantBinding,
	})
	f.openPull("opened", 3, "bad", head, "acme/app")

	st := f.statusOf(head)
	g.Expect(st).NotTo(BeNil())
	g.Expect(st.State).To(Equal("failure"))
	g.Expect(st.Description).To(ContainSubstring("2 of 2 Applications would fail"))
	comments := f.forge.Comments("acme/app", 3)
	g.Expect(comments).To(HaveLen(1))
	body := comments[0].Body
	t.Logf("comment:\n%s", body)
	g.Expect(body).To(ContainSubstring("| " + f.ns + "/plain | 0 | 1 | 0 | 0 | 1 refused |"))
	g.Expect(body).To(ContainSubstring("**Refused by the API server:** `Deployment/" + f.ns + "/bad`"))
	g.Expect(body).To(ContainSubstring("replicas"))
	g.Expect(body).To(ContainSubstring("**Refused by RBAC:** `ClusterRoleBinding/tenant-admin`"))
	g.Expect(body).To(ContainSubstring("system:serviceaccount:" + f.ns + ":deployer"))
	g.Expect(f.versions(g)).To(Equal(before))
}
