package image_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/image"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
)

// TestTenantModeChecksSecretAccess: in tenant mode a Secret is read for an image object
// only when the namespace's tenant account may get it; otherwise AccessDenied and no data.
func TestTenantModeChecksSecretAccess(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, secret(ns, "regcred", map[string]string{".dockerconfigjson": `{"auths":{}}`}))
	access := sources.NewSecretAccess(env.Client, "tenant", true)

	data, reason, err := image.ReadSecret(ctx, env.Client, access, ns, "regcred")
	g.Expect(err).To(HaveOccurred())
	g.Expect(reason).To(Equal(gitsyncv1.AccessDeniedReason))
	g.Expect(data).To(BeNil())

	env.ServiceAccountToken(t, ns, "tenant", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	g.Eventually(func() error {
		_, _, err := image.ReadSecret(ctx, env.Client, access, ns, "regcred")
		return err
	}, wait, poll).Should(Succeed())
	data, _, _ = image.ReadSecret(ctx, env.Client, access, ns, "regcred")
	g.Expect(data).To(HaveKey(".dockerconfigjson"))
}
