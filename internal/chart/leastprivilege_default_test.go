package chart

import (
	"testing"

	. "github.com/onsi/gomega"
)

// clusterRoles names the ClusterRoles the chart renders with values.
func clusterRoles(t *testing.T, values map[string]any) []string {
	t.Helper()
	var names []string
	for _, o := range mustRender(t, "gitsync-system", values) {
		if o.GetKind() == "ClusterRole" && o.GetName() != "gitsync-metrics-reader" {
			names = append(names, o.GetName())
		}
	}
	return names
}

// rbac.leastPrivilege follows tenant mode when unset: the chart's default (tenant mode)
// binds the least-privilege role; without tenancy.defaultServiceAccount it binds
// gitsync-manager (Applications then write as the operator); false asks for
// gitsync-manager in tenant mode too.
func TestLeastPrivilegeIsTheTenantModeDefault(t *testing.T) {
	g := NewWithT(t)
	g.Expect(clusterRoles(t, nil)).To(Equal([]string{"gitsync-manager-tenant-mode"}))
	g.Expect(clusterRoles(t, map[string]any{"tenancy": map[string]any{"defaultServiceAccount": ""}})).
		To(Equal([]string{"gitsync-manager"}))
	g.Expect(clusterRoles(t, map[string]any{"rbac": map[string]any{"leastPrivilege": false}})).
		To(Equal([]string{"gitsync-manager"}))
	g.Expect(clusterRoles(t, map[string]any{"rbac": map[string]any{"leastPrivilege": true}})).
		To(Equal([]string{"gitsync-manager-tenant-mode"}))
}
