package demo

import (
	"context"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// uiViewer is the ServiceAccount (in Namespace) whose token logs into the demo's UI.
const uiViewer = "ui-viewer"

// uiToken lets the ServiceAccount uiViewer read what the demo shows (gitsync's kinds,
// workloads, ConfigMaps and events, cluster-wide; no Secrets) and returns a token of it:
// the operator's UI answers with the rights of the token's user.
func uiToken(ctx context.Context, c client.Client) (string, error) {
	read := []string{"get", "list", "watch"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: uiViewer, Namespace: Namespace}}
	name := "gitsync-demo-ui-viewer"
	for _, obj := range []client.Object{
		sa,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"gitsync.dev"}, Resources: []string{"*"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "events", "pods", "services", "serviceaccounts", "namespaces"}, Verbs: read},
			{APIGroups: []string{"apps", "batch"}, Resources: []string{"*"}, Verbs: read},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: uiViewer, Namespace: Namespace}}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return "", fmt.Errorf("creating the UI's viewer: %w", err)
		}
	}
	expiry := int64(24 * 3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := c.SubResource("token").Create(ctx, sa, req); err != nil {
		return "", fmt.Errorf("requesting a token for the UI: %w", err)
	}
	return req.Status.Token, nil
}

// waitUI waits until the web UI at url lists the demo's Application to token's user.
func waitUI(ctx context.Context, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"apps/"+Namespace+"/demo", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the web UI at %s: %w", url, err)
	}
	return nil
}
