package cli

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// `gitsync sync app NAME --resource …` requests a selective sync of the objects it names
// (gitsync.dev/sync-resources, tied to this request) and prints its outcome; a selector
// that does not parse, or --resource on a source, is refused before anything is written.
func TestSyncResourceFlag(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	r := gitsync(t, "sync", "app", "web", "-n", f.ns, "--resource", "ConfigMap/settings", "--resource", "apps/Deployment/"+f.ns+"/web")
	g.Expect(r.code).To(Equal(0), r.String())
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	requested := app.Annotations[gitsyncv1.RequestedAtAnnotation]
	g.Expect(app.Annotations[gitsyncv1.SyncResourcesAnnotation]).To(Equal(
		gitsyncv1.ResourcesRequest([]string{"ConfigMap/settings", "apps/Deployment/" + f.ns + "/web"}, requested)))
	g.Expect(app.Status.LastHandledReconcileAt).To(Equal(requested))

	r = gitsync(t, "sync", "app", "web", "-n", f.ns, "--resource", "web")
	g.Expect(r.code).NotTo(Equal(0))
	g.Expect(r.err).To(ContainSubstring("[GROUP/]KIND[/NAMESPACE]/NAME"))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(requested))

	r = gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns, "--resource", "ConfigMap/settings")
	g.Expect(r.code).NotTo(Equal(0))
	g.Expect(r.err).To(ContainSubstring("--resource selects objects of an Application"))
}
