package cli

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// readyOf is the Application's Ready condition (status, reason) and sync status.
func (f *fixture) readyOf(g Gomega) (metav1.ConditionStatus, string, string) {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
	c := apimeta.FindStatusCondition(f.app.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(f.app.Status.Sync).NotTo(BeNil())
	return c.Status, c.Reason, f.app.Status.Sync.Status
}

// Drift that selfHeal: false only reports makes the Application not Ready
// (DriftDetected) and OutOfSync: `wait` (for ready) does not succeed while it lasts, and
// succeeds once the edit is undone.
func TestNotReadyWhileDrifted(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "settings"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		status, reason, sync := f.readyOf(g)
		g.Expect(status).To(Equal(metav1.ConditionFalse))
		g.Expect(reason).To(Equal(gitsyncv1.DriftDetectedReason))
		g.Expect(sync).To(Equal(gitsyncv1.SyncStatusOutOfSync))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	r := gitsync(t, "wait", "app", "web", "-n", f.ns, "--timeout", "3s")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("timed out after 3s waiting for Application " + f.ns + "/web to be ready"))
	g.Expect(r.err).To(ContainSubstring("Ready=False (DriftDetected: 1 object(s) differ from revision main@sha1:" + f.sha))

	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "settings"}, cm)).To(Succeed())
	base = client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = "hello"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--timeout", "1m")
	g.Expect(r.code).To(Equal(0), r.String())
	status, reason, sync := f.readyOf(g)
	g.Expect([]string{string(status), reason, sync}).To(Equal([]string{"True", gitsyncv1.SucceededReason, gitsyncv1.SyncStatusSynced}))
}

// A sync that a request kept from pruning (reconcile --prune=false) applied the revision,
// but what left Git is still there: OutOfSync and Ready=False/PruneSkipped, not a failure
// of the reconcile; the next sync that prunes makes it Synced and Ready.
func TestNoPruneSyncIsOutOfSync(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	f.setAutoSync(t, false) // the new revision waits for the request (else spec.prune prunes)
	sha := f.repo.Commit("main", "settings left Git", nil, "app/configmap.yaml")

	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source", "--prune=false")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("applied revision main@sha1:" + sha))
	status, reason, sync := f.readyOf(g)
	g.Expect([]string{string(status), reason, sync}).To(Equal([]string{"False", gitsyncv1.PruneSkippedReason, gitsyncv1.SyncStatusOutOfSync}))
	g.Expect(f.app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	g.Expect(apimeta.FindStatusCondition(f.app.Status.Conditions, gitsyncv1.ReadyCondition).Message).To(ContainSubstring("ConfigMap/" + f.ns + "/settings"))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "settings"}, &corev1.ConfigMap{})).To(Succeed())
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "synced", "--timeout", "3s")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("timed out after 3s"))

	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "synced", "--timeout", "1m")
	g.Expect(r.code).To(Equal(0), r.String())
	status, reason, sync = f.readyOf(g)
	g.Expect([]string{string(status), reason, sync}).To(Equal([]string{"True", gitsyncv1.SucceededReason, gitsyncv1.SyncStatusSynced}))
}
