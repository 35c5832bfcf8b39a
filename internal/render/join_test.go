package render

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func configMap(ns, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// The sources' objects join in order, with each chart's CRDs; an object two sources
// render is refused, naming both.
func TestJoinedRefusesAnObjectOfTwoSources(t *testing.T) {
	g := NewWithT(t)
	var j Joined
	g.Expect(j.Add("sources[0] (HelmRepository/charts)", &Result{Objects: []*unstructured.Unstructured{configMap("ns", "a")},
		Chart: Chart{Name: "web", Version: "1.0.0", CRDs: map[string]bool{"x": true}}, Sensitive: []string{"s"}})).To(Succeed())
	g.Expect(j.Add("sources[1] (GitRepository/b)", &Result{Objects: []*unstructured.Unstructured{configMap("ns", "b")},
		Chart: Chart{Name: "other", CRDs: map[string]bool{"y": true}, CreateOnly: true}})).To(Succeed())
	g.Expect(j.Objects).To(HaveLen(2))
	g.Expect(j.Chart.Name).To(Equal("web"))
	g.Expect(j.Chart.CRDs).To(Equal(map[string]bool{"x": true, "y": true}))
	g.Expect(j.Chart.CreateOnly).To(BeTrue())
	g.Expect(j.Sensitive).To(Equal([]string{"s"}))

	err := j.Add("sources[2] (GitRepository/c)", &Result{Objects: []*unstructured.Unstructured{configMap("ns", "a")}})
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap/ns/a is rendered by both sources[0] (HelmRepository/charts) and sources[2] (GitRepository/c)")))
}
