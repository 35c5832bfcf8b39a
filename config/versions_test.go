package config_test

import (
	"fmt"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/config"
)

// versionDifferences lists, for a CRD served in more than one version, what a version
// declares differently from the stored one: its schema, subresources, printer columns
// or selectable fields. Conversion strategy None relabels an object from one version to
// the other and is exact only while this is empty.
func versionDifferences(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var stored *apiextensionsv1.CustomResourceDefinitionVersion
	for i, v := range crd.Spec.Versions {
		if v.Storage {
			stored = &crd.Spec.Versions[i]
		}
	}
	if stored == nil {
		return []string{crd.Name + " stores no version"}
	}
	var diffs []string
	for _, v := range crd.Spec.Versions {
		if v.Name == stored.Name {
			continue
		}
		for _, part := range []struct {
			what string
			a, b any
		}{
			{"openAPIV3Schema", v.Schema, stored.Schema},
			{"subresources", v.Subresources, stored.Subresources},
			{"additionalPrinterColumns", v.AdditionalPrinterColumns, stored.AdditionalPrinterColumns},
			{"selectableFields", v.SelectableFields, stored.SelectableFields},
		} {
			if !reflect.DeepEqual(part.a, part.b) {
				diffs = append(diffs, fmt.Sprintf("%s: the %s of %s and %s differ", crd.Name, part.what, v.Name, stored.Name))
			}
		}
	}
	return diffs
}

// v1alpha1Kinds are the kinds v1alpha1 served; kinds added since (marked
// "// +gitsync:hubonly" for hack/apicopy) are served as v1beta1 alone.
var v1alpha1Kinds = map[string]bool{
	"GitRepository": true, "HelmRepository": true, "Application": true, "Provider": true, "Alert": true,
}

// While the versions of a kind declare the same schema, the CRDs convert with strategy
// None (no webhook that has to run for v1alpha1 requests to work). This fails the day a
// field differs; then the conversion must be written, not relabelled.
func TestServedVersionsHaveEqualSchemas(t *testing.T) {
	g := NewWithT(t)
	crds, err := config.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	multi := 0
	for _, crd := range crds {
		if len(crd.Spec.Versions) < 2 {
			continue
		}
		multi++
		if diffs := versionDifferences(crd); len(diffs) > 0 {
			t.Errorf("%v\nThe versions of %s no longer have equal schemas, so conversion strategy None "+
				"(which relabels objects) would lose or invent fields. Bring back a conversion webhook, typed "+
				"as kubebuilder writes it: v1beta1 the hub (Hub()), api/v1alpha1 with ConvertTo/ConvertFrom "+
				"that convert field by field (stop generating the differing types with hack/apicopy), "+
				"spec.conversion.strategy Webhook in config/crd, the chart and the bundle, with its serving "+
				"certificate and Service; and a test that v1alpha1 requests fail clearly while no operator runs.",
				diffs, crd.Name)
		}
	}
	g.Expect(multi).To(Equal(len(v1alpha1Kinds)), "every kind that v1alpha1 served is served as v1alpha1 and v1beta1")
	for _, crd := range crds {
		if !v1alpha1Kinds[crd.Spec.Names.Kind] {
			g.Expect(crd.Spec.Versions).To(HaveLen(1), "%s came after v1alpha1: it is served as v1beta1 only", crd.Name)
			g.Expect(crd.Spec.Versions[0].Name).To(Equal("v1beta1"), crd.Name)
		}
	}

	// The check itself: a field that only one version has is found.
	for _, crd := range crds {
		if crd.Name != "applications.gitsync.dev" {
			continue
		}
		changed := crd.DeepCopy()
		for i, v := range changed.Spec.Versions {
			if !v.Storage {
				spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
				spec.Properties["selfHealing"] = spec.Properties["selfHeal"]
				delete(spec.Properties, "selfHeal")
				changed.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			}
		}
		g.Expect(versionDifferences(changed)).To(ConsistOf(
			"applications.gitsync.dev: the openAPIV3Schema of v1alpha1 and v1beta1 differ"))
		g.Expect(versionDifferences(crd)).To(BeEmpty(), "the check changed the CRD it was given")
	}
}

// The install (config/default, which `gitsync install`, the chart and the bundle are
// made from) asks the API server to convert by relabelling: no CRD names a conversion
// webhook, and no Service, port or certificate Role exists for one.
func TestInstallConvertsWithoutWebhook(t *testing.T) {
	g := NewWithT(t)
	objs, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	crds := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds++
			strategy, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "strategy")
			g.Expect(strategy).To(Or(BeEmpty(), Equal("None")), o.GetName())
			_, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "conversion", "webhook")
			g.Expect(found).To(BeFalse(), o.GetName())
		case "Service", "Role", "RoleBinding", "Secret":
			g.Expect(o.GetName()).NotTo(ContainSubstring("conversion"), o.GetKind())
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				ports, _, _ := unstructured.NestedSlice(c.(map[string]any), "ports")
				for _, p := range ports {
					g.Expect(p).NotTo(HaveKeyWithValue("containerPort", BeNumerically("==", 9443)))
					g.Expect(p).NotTo(HaveKeyWithValue("name", "conversion"))
				}
				args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				g.Expect(args).NotTo(ContainElement(ContainSubstring("conversion")))
			}
		}
	}
	all, err := config.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crds).To(Equal(len(all)))
}

// The samples are written in the stored version, v1beta1, as the docs are.
func TestSamplesUseV1beta1(t *testing.T) {
	g := NewWithT(t)
	n := 0
	for _, o := range build(t, "samples") {
		if o.GroupVersionKind().Group == "gitsync.dev" {
			n++
			g.Expect(o.GetAPIVersion()).To(Equal("gitsync.dev/v1beta1"), "%s %s", o.GetKind(), o.GetName())
		}
	}
	g.Expect(n).To(BeNumerically(">=", 5))
}
