package demo

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// remoteFiles are what the Application remote syncs through the Cluster self.
var remoteFiles = map[string]string{
	"apps/remote/app.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: remote-app
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: where
  namespace: remote-app
data:
  cluster: self, reached through a Cluster and its kubeconfig Secret
`,
}

// createSelfCluster registers the demo's own API server as the Cluster self (its
// kubeconfig, the demo's admin one, in a Secret: certificates only, no file paths) and
// creates the Application remote that syncs apps/remote there with spec.cluster. The
// demo runs without the egress guard, as for its Git repository and registries on loopback.
func createSelfCluster(ctx context.Context, c client.Client, kubeconfig []byte) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "self-kubeconfig", Namespace: Namespace},
		Data:       map[string][]byte{"value": kubeconfig},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating the Cluster self's kubeconfig Secret: %w", err)
	}
	cluster := &gitsyncv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "self", Namespace: Namespace},
		Spec:       gitsyncv1.ClusterSpec{KubeConfig: gitsyncv1.KubeConfigReference{SecretRef: gitsyncv1.SecretKeyReference{Name: secret.Name}}},
	}
	if err := c.Create(ctx, cluster); err != nil {
		return fmt.Errorf("creating the Cluster self: %w", err)
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"},
			Path:      "apps/remote",
			Cluster:   &gitsyncv1.ClusterReference{Name: cluster.Name},
			Prune:     true,
		},
	}
	if err := c.Create(ctx, app); err != nil {
		return fmt.Errorf("creating the Application remote: %w", err)
	}
	return nil
}

// clusterHints are the demo's printed hints for the Cluster self.
const clusterHints = `  # another cluster: the demo's own API server, registered as the Cluster self, and an Application on it
  kubectl get gscluster -n {ns}
  kubectl get gsapp remote -n {ns} -o jsonpath='{.spec.cluster}{"\n"}'
  kubectl get configmap where -n remote-app -o jsonpath='{.data.cluster}{"\n"}'

`

// waitSelfCluster waits until the Application remote is Synced on the Cluster self.
func waitSelfCluster(ctx context.Context, c client.Client, say func(string, ...any)) error {
	if _, err := waitSynced(ctx, c, "remote"); err != nil {
		return err
	}
	say("Application %s/remote is Synced on the Cluster self (the demo's own API server, reached through a kubeconfig Secret)", Namespace)
	return nil
}
