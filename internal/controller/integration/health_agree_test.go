package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/health"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// gaugeCRD defines Gauge, which kstatus misjudges: without conditions or
// observedGeneration it is Current whatever status.phase says.
func gaugeCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.%[1]s
spec:
  group: %[1]s
  names: {kind: Gauge, listKind: GaugeList, plural: gauges, singular: gauge}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            status:
              type: object
              properties:
                phase: {type: string}
`, group)
}

func gaugeYAML(group, name, annotations string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: Gauge\nmetadata:\n  name: %s\n  annotations: {%s}\n", group, name, annotations)
}

// setPhase writes the Gauge's status.phase, as its controller would.
func setPhase(g Gomega, group, ns, name, phase string) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gauge"})
	g.Eventually(func() error {
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	base := obj.DeepCopy()
	g.Expect(unstructured.SetNestedField(obj.Object, phase, "status", "phase")).To(Succeed())
	g.Expect(env.Client.Status().Patch(context.Background(), obj, client.MergeFrom(base))).To(Succeed())
}

// One health: for an Application with a CEL check on a kind kstatus misjudges, the
// apply's wait (spec.wait), a wave's wait (phase), the tree that `gitsync tree` and the
// UI show, and status.health all judge by the check — Degraded while the Gauge says
// Failed (kstatus alone: Healthy), Healthy once it says Ready.
func TestHealthAgreesAcrossWaitTreeAndStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	group := ns + ".health.example.org"
	f, sha := newAppFixtureIn(t, ns, map[string]string{
		"crd.yaml":   gaugeCRD(group),
		"gauge.yaml": gaugeYAML(group, "g", ""),
	})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.Wait = true
		a.Spec.HealthChecks = []gitsyncv1.HealthCheck{{APIVersion: group + "/v1", Kind: "Gauge",
			Current: "status.phase == 'Ready'", Failed: "status.phase == 'Failed'"}}
	})
	subject := "Gauge/" + ns + "/g"
	treeHealth := func(g Gomega, app *gitsyncv1.Application) string {
		nodes, _, err := tree.Build(ctx, env.Client, app, tree.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, n := range nodes {
			if n.ID == subject {
				return n.Health
			}
		}
		return "absent"
	}

	// The apply's wait fails on the check's verdict, at once.
	setPhase(g, group, ns, "g", "Failed")
	msg := f.waitNotReady("app", gitsyncv1.HealthCheckFailedReason)
	g.Expect(msg).To(ContainSubstring("failed: " + subject + " (Failed: health check: failed)"))
	app := f.get(g, "app")
	g.Expect(app.Status.Health).NotTo(BeNil())
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusDegraded), app.Status.Health.Message)
	g.Expect(treeHealth(g, app)).To(Equal(app.Status.Health.Status), "the tree judges as status.health")
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gauge"})
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g"}, live)).To(Succeed())
	g.Expect(health.Kstatus(live).Status).To(Equal(health.Healthy), "kstatus alone misjudges the Gauge")

	// Ready: every reader says Healthy.
	setPhase(g, group, ns, "g", "Ready")
	app = f.waitApplied("app", sha)
	g.Expect(app.Status.Health).NotTo(BeNil())
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy), app.Status.Health.Message)
	g.Expect(treeHealth(g, app)).To(Equal(gitsyncv1.HealthStatusHealthy))

	// A wave waits by the same judge: a Failed Gauge in wave 0 holds wave 1 back.
	setPhase(g, group, ns, "g", "Failed")
	f.repo.Commit("main", "waves", map[string]string{
		"gauge.yaml": gaugeYAML(group, "g", `gitsync.dev/sync-wave: "0"`),
		"after.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  annotations: {gitsync.dev/sync-wave: \"1\"}\ndata: {k: v}\n",
	})
	msg = f.waitNotReady("app", gitsyncv1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring(subject + " is degraded: health check: failed"))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "after")).To(BeFalse(), "wave 1 is not applied")
	g.Expect(treeHealth(g, f.get(g, "app"))).To(Equal(gitsyncv1.HealthStatusDegraded))
}
