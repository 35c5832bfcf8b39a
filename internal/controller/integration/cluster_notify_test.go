package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A Cluster that does not answer is an event that Alerts with eventSources kind Cluster
// deliver, and gitsync_cluster_ready is 0 for it.
func TestClusterUnreachableNotifiedAndMeasured(t *testing.T) {
	g := NewWithT(t)
	f := newNotifyFixture(t)
	f.provider("ops", "generic", "/clusters", nil)
	f.alert("clusters", "ops", func(a *gitsyncv1.Alert) {
		a.Spec.EventSources = []gitsyncv1.EventSource{{Kind: gitsyncv1.ClusterKind, Name: "*"}}
	})
	// Nothing listens on port 1.
	createCluster(t, f.ns, "gone", []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`))
	f.waitRequest("/clusters", `"reason":"ClusterUnreachable"`, `"severity":"error"`, `"kind":"Cluster"`, `"name":"gone"`, "connection refused")
	g.Eventually(func(g Gomega) float64 {
		v, ok := gaugeValue(g, "gitsync_cluster_ready", map[string]string{"namespace": f.ns, "name": "gone"})
		g.Expect(ok).To(BeTrue())
		return v
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeZero())
}

// gaugeValue reads a gauge with exactly these labels from controller-runtime's registry.
func gaugeValue(g Gomega, name string, labels map[string]string) (float64, bool) {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
