package config_test

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The installed manager serves /metrics only to callers the API server authenticates
// and authorizes (--metrics-secure), and says https to annotation-based scrapers.
func TestDefaultInstallServesMetricsSecurely(t *testing.T) {
	g := NewWithT(t)
	found := false
	for _, o := range build(t, "default") {
		if o.GetKind() != "Deployment" {
			continue
		}
		found = true
		template := o.Object["spec"].(map[string]any)["template"].(map[string]any)
		var args []string
		for _, a := range template["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any) {
			args = append(args, a.(string))
		}
		g.Expect(args).To(ContainElement("--metrics-secure"))
		annotations := template["metadata"].(map[string]any)["annotations"].(map[string]any)
		g.Expect(annotations).To(HaveKeyWithValue("prometheus.io/scheme", "https"))
	}
	g.Expect(found).To(BeTrue())
}
