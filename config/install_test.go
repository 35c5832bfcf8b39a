package config_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, nil))
}

// build renders a kustomization of this directory with kustomize/api, as `kubectl -k` does.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// serverDryRun server-side-applies every object in dry-run mode; Namespaces are created
// for real first, since objects in them cannot be dry-run otherwise.
func serverDryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, o.DeepCopy()))).To(Succeed())
		}
	}
	for _, o := range objs {
		err := env.Client.Patch(ctx, o, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("install-test"))
		g.Expect(err).NotTo(HaveOccurred(), "%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
}

// The install (kubectl apply -k config/default) is accepted by a real API server.
func TestDefaultInstallIsValid(t *testing.T) {
	objs := build(t, "default")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	crds, err := config.CRDs()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(kinds).To(Equal(map[string]int{
		"CustomResourceDefinition": len(crds), "Namespace": 1, "ServiceAccount": 1, "ClusterRole": 1,
		"ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1, "Deployment": 1, "Service": 1,
	}))
	serverDryRun(t, objs)
}

// The samples pass the CRDs' validation.
func TestSamplesAreValid(t *testing.T) {
	serverDryRun(t, build(t, "samples"))
}

// What a user runs: `kubectl apply --dry-run=server -k config/default` against a real API server.
func TestKubectlDryRunInstall(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH; TestDefaultInstallIsValid checks the same objects in process")
	}
	g := NewWithT(t)
	kubeconfig, err := env.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	// The namespace must exist for a server-side dry-run of the objects in it.
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-system"}}))).To(Succeed())
	cmd := exec.Command(kubectl, "--kubeconfig", path, "apply", "--dry-run=server", "-k", "default")
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("deployment.apps/gitsync"))
}
