package config_test

import (
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/conversion"
)

// In the install (config/default, as `gitsync install`, the chart and the bundle have it), every CRD served in more than one version (and only those: the ones
// internal/conversion injects its CA into) is converted by the webhook behind the Service
// gitsync-conversion, which exists and leads to the manager's port "conversion".
func TestConversionWebhookIsInstalled(t *testing.T) {
	g := NewWithT(t)
	objs, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	var converted []string
	var service, deployment *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "CustomResourceDefinition":
			versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
			strategy, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "strategy")
			if len(versions) < 2 {
				g.Expect(strategy).To(BeEmpty(), "%s has one version", o.GetName())
				continue
			}
			g.Expect(strategy).To(Equal("Webhook"), o.GetName())
			svc, _, _ := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig", "service")
			g.Expect(svc).To(Equal(map[string]any{"namespace": "gitsync-system", "name": conversion.DefaultServiceName,
				"path": conversion.Path, "port": int64(443)}), o.GetName())
			converted = append(converted, o.GetName())
		case o.GetKind() == "Service" && o.GetName() == conversion.DefaultServiceName:
			service = o
		case o.GetKind() == "Deployment":
			deployment = o
		}
	}
	sort.Strings(converted)
	g.Expect(converted).To(Equal(conversion.CRDs))

	g.Expect(service).NotTo(BeNil(), "no Service %s", conversion.DefaultServiceName)
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	g.Expect(ports).To(ConsistOf(HaveKeyWithValue("targetPort", "conversion")))
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0]).To(HaveKeyWithValue("ports", ContainElement(
		And(HaveKeyWithValue("name", "conversion"), HaveKeyWithValue("containerPort", BeNumerically("==", 9443))))))
}
