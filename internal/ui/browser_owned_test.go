package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
`

const cronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: report
            image: busybox:1.36
`

// addOwned creates what the built-in controllers would (envtest runs none), each with the
// ownerReference that hangs it under its owner: the Service's EndpointSlice, and a Job
// of the CronJob with its Pod.
func (f *fixture) addOwned(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	owner := func(obj client.Object, apiVersion, kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}}
	}
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, svc)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Namespace: f.ns, Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
			OwnerReferences: owner(svc, "v1", "Service")},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
	})).To(Succeed())
	cron := &batchv1.CronJob{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly"}, cron)).To(Succeed())
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29412180", Namespace: f.ns, OwnerReferences: owner(cron, "batch/v1", "CronJob")},
		Spec:       cron.Spec.JobTemplate.Spec,
	}
	g.Expect(env.Client.Create(ctx, job)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29412180-q4v8d", Namespace: f.ns, OwnerReferences: owner(job, "batch/v1", "Job")},
		Spec:       job.Spec.Template.Spec,
	})).To(Succeed())
}

// The graph hangs owned children under their owners, as far down as they go (the tree
// of internal/tree, the one `gitsync tree` prints): Deployment → ReplicaSet → Pod,
// Service → EndpointSlice, CronJob → Job → Pod, each an edge from the owner and one
// column to its right; the list nests them the same way.
func TestBrowserGraphHangsOwnedChildrenUnderOwners(t *testing.T) {
	g := NewWithT(t)
	ctx := browser.New(t, 1400, 900)
	f := newFixtureWith(t, map[string]string{"service.yaml": serviceYAML, "cronjob.yaml": cronJobYAML})
	f.addChildren(t)
	f.addOwned(t)
	srv := startUI(t, env.Config, ui.Options{})
	id := func(kind, name string) string { return kind + "/" + f.ns + "/" + name }
	chains := [][]string{
		{id("Deployment", "web"), id("ReplicaSet", "web-7d9f"), id("Pod", "web-7d9f-abcde")},
		{id("Service", "web"), id("EndpointSlice", "web-x7k2p")},
		{id("CronJob", "nightly"), id("Job", "nightly-29412180"), id("Pod", "nightly-29412180-q4v8d")},
	}

	do(t, ctx, 30*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=graph"),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.gnode[data-id="`+id("Pod", "nightly-29412180-q4v8d")+`"]`)))
	screenshot(t, ctx, t.TempDir(), "graph-owned")
	for _, chain := range chains {
		// The application is the root: the chain's top hangs under it.
		g.Expect(eval[int](t, ctx, `document.querySelectorAll('#graph path.edge[data-from=""][data-to="`+chain[0]+`"]').length`)).To(
			Equal(1), "%s under the application", chain[0])
		for i := 1; i < len(chain); i++ {
			parent, child := chain[i-1], chain[i]
			g.Expect(eval[int](t, ctx, `document.querySelectorAll('#graph path.edge[data-from="`+parent+`"][data-to="`+child+`"]').length`)).To(
				Equal(1), "an edge %s → %s", parent, child)
			g.Expect(eval[int](t, ctx, `document.querySelectorAll('#graph path.edge[data-to="`+child+`"]').length`)).To(
				Equal(1), "%s has one owner in the graph", child)
			xs := eval[[]float64](t, ctx, `["`+parent+`", "`+child+`"].map(function (id) {
				return document.querySelector('#graph g.gnode[data-id="' + id + '"]').getCTM().e; })`)
			g.Expect(xs[1]).To(BeNumerically(">", xs[0]), "%s right of %s", child, parent)
			// The list: the child is in its owner's group.
			g.Expect(eval[bool](t, ctx, `(function(){ var b = document.querySelector('#tree button.node[data-id="`+child+`"]');
				var up = b && b.closest("ul[role=group]"); var owner = up && up.parentElement.querySelector(":scope > button.node");
				return !!owner && owner.dataset.id === "`+parent+`"; })()`)).To(BeTrue(), "%s nested under %s in the list", child, parent)
		}
	}

	// An owned child opens in the object panel with its live manifest, as the others do.
	slice := id("EndpointSlice", "web-x7k2p")
	do(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`#graph g.gnode[data-id="`+slice+`"]`)))
	poll(t, ctx, 30*time.Second, `document.getElementById("object").dataset.loaded === "`+slice+`"`)
	g.Expect(text(t, ctx, "#obj-live")).To(ContainSubstring("addressType: IPv4"))
}
