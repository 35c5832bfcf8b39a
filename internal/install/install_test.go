package install_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/install"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// A cluster that ran a build whose CRDs converted through the operator's webhook (the
// operator wrote the webhook's caBundle as a field manager of its own) takes the new CRDs,
// which convert with strategy None: the install clears the webhook instead of failing with
// "webhookClientConfig: Forbidden".
func TestInstallReplacesAConversionWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "applications.gitsync.dev"
	webhook := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{
					"service": map[string]any{"name": "gitsync-conversion", "namespace": "gitsync-system", "path": "/convert", "port": int64(443)},
				},
			},
		}},
	}}
	g.Expect(env.Client.Patch(ctx, webhook, client.Apply, client.FieldOwner("gitsync-cert-rotator"), client.ForceOwnership)).To(Succeed())
	t.Cleanup(func() { // the other tests of this API server need strategy None back
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = name
		_ = env.Client.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)))
	})

	objs, err := install.Manifests("")
	g.Expect(err).NotTo(HaveOccurred())
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && o.GetName() == name {
			crds = append(crds, o)
		}
	}
	g.Expect(crds).To(HaveLen(1))
	_, err = install.Apply(ctx, env.Client, crds)
	g.Expect(err).NotTo(HaveOccurred())

	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
	g.Expect(crd.Spec.Conversion).NotTo(BeNil())
	g.Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.NoneConverter))
	g.Expect(crd.Spec.Conversion.Webhook).To(BeNil())
}
