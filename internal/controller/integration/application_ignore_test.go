package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func scaledDeploymentYAML(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: %s}]
`, image)
}

// editDeployment changes the Deployment as another field manager (an autoscaler, a person).
func editDeployment(g Gomega, ns, manager string, change func(*appsv1.Deployment)) {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	change(d)
	g.Expect(env.Client.Update(context.Background(), d, client.FieldOwner(manager))).To(Succeed())
}

// With ignoreDifferences on /spec/replicas, what an autoscaler set survives a new commit
// that changes something else, and a drift correction of another field.
func TestApplicationIgnoreDifferencesRespectedOnApply(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"web.yaml": scaledDeploymentYAML("web:1")})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.IgnoreDifferences = []gitsyncv1.IgnoreDifference{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
	})
	f.waitApplied("app", sha)
	deployment := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, d)).To(Succeed())
		return d
	}
	g.Expect(deployment(g).Spec.Replicas).To(Equal(ptr.To[int32](2)))

	editDeployment(g, f.ns, "hpa", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	sha = f.repo.Commit("main", "new image", map[string]string{"web.yaml": scaledDeploymentYAML("web:2")})
	f.waitApplied("app", sha)
	d := deployment(g)
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("web:2"))
	g.Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](5)))

	// A hand edit of the image is corrected; the replicas stay the autoscaler's.
	editDeployment(g, f.ns, "hpa", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](6) })
	editDeployment(g, f.ns, "kubectl-edit", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "web:hand" })
	g.Eventually(func(g Gomega) string {
		return deployment(g).Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("web:2"))
	g.Expect(deployment(g).Spec.Replicas).To(Equal(ptr.To[int32](6)))
}
