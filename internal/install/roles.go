package install

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ManagerRoles are the operator's two ClusterRoles, each bound by a ClusterRoleBinding of
// its own name (a binding's roleRef cannot change): an install binds one of them.
var ManagerRoles = []string{"gitsync-manager", "gitsync-manager-tenant-mode"}

// RemoveOtherRole deletes the manager ClusterRole and ClusterRoleBinding that objs do not
// hold, when an earlier `gitsync install` (or bootstrap) made them: switching to the
// least-privilege role must not leave the write-anything one bound. Objects someone else
// made (no apply of FieldManager) are left alone. Returns what it deleted.
func RemoveOtherRole(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]string, error) {
	var bound []string
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" {
			bound = append(bound, o.GetName())
		}
	}
	if !slices.ContainsFunc(bound, func(b string) bool { return slices.Contains(ManagerRoles, b) }) {
		return nil, nil // objs bind neither role: nothing to switch from
	}
	var deleted []string
	for _, name := range ManagerRoles {
		if slices.Contains(bound, name) {
			continue
		}
		for _, obj := range []client.Object{&rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRole{}} {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return deleted, fmt.Errorf("reading %s: %w", name, err)
			}
			if !appliedByInstall(obj) {
				continue
			}
			if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return deleted, fmt.Errorf("deleting %s: %w", name, err)
			}
			kind := "clusterrolebinding"
			if _, ok := obj.(*rbacv1.ClusterRole); ok {
				kind = "clusterrole"
			}
			deleted = append(deleted, kind+".rbac.authorization.k8s.io/"+name)
		}
	}
	return deleted, nil
}

// appliedByInstall tells whether FieldManager applied obj.
func appliedByInstall(obj client.Object) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == FieldManager {
			return true
		}
	}
	return false
}
