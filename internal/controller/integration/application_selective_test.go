package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A selective sync (gitsync sync app NAME --resource ConfigMap/a) of a changed revision
// applies only the object it names: the other keeps the previous revision's value, the
// Application stays OutOfSync at the new revision (Ready=False, PartiallySynced) with
// status.selectiveSync naming what was applied, drift correction holds each object at
// the revision it was applied from, and a full sync then applies the rest.
func TestSelectiveSyncAppliesOnlyTheSelected(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"a.yaml": configMapYAML("a", "1"), "b.yaml": configMapYAML("b", "1")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.AutoSync = ptr.To(false) })
	request := func(value string, resources ...string) {
		f.edit(g, "app", func(a *gitsyncv1.Application) {
			a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
			if len(resources) > 0 {
				a.Annotations[gitsyncv1.SyncResourcesAnnotation] = gitsyncv1.ResourcesRequest(resources, value)
			}
		})
	}
	request("1")
	f.waitApplied("app", sha)

	sha2 := f.repo.Commit("main", "two", map[string]string{"a.yaml": configMapYAML("a", "2"), "b.yaml": configMapYAML("b", "2")})
	g.Eventually(func(g Gomega) *gitsyncv1.SyncInfo { return f.get(g, "app").Status.Sync }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HaveField("Revision", "main@sha1:"+sha2))

	// A selector that names no object of the revision refuses the request.
	request("2", "ConfigMap/nope")
	g.Expect(f.waitNotReady("app", gitsyncv1.ApplyFailedReason)).To(ContainSubstring("ConfigMap/nope"))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("1"))

	request("3", "ConfigMap/"+f.ns+"/a")
	msg := f.waitNotReady("app", gitsyncv1.PartiallySyncedReason)
	g.Expect(msg).To(ContainSubstring("1 of 2 object(s) of revision main@sha1:" + sha2))
	g.Expect(f.configMap(g, "a").Data["value"]).To(Equal("2"))
	g.Expect(f.configMap(g, "b").Data["value"]).To(Equal("1"))
	app := f.get(g, "app")
	g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	g.Expect(app.Status.Sync).To(Equal(&gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusOutOfSync, Revision: "main@sha1:" + sha2}))
	g.Expect(app.Status.SelectiveSync).NotTo(BeNil())
	g.Expect(app.Status.SelectiveSync.Revision).To(Equal("main@sha1:" + sha2))
	g.Expect(app.Status.SelectiveSync.Objects).To(Equal([]string{"ConfigMap/" + f.ns + "/a"}))
	g.Expect(app.Status.LastHandledReconcileAt).To(Equal("3"))

	// Drift correction holds a at the new revision and b at the one before.
	for name, want := range map[string]string{"a": "2", "b": "1"} {
		cm := f.configMap(g, name)
		editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "edited" })
		g.Eventually(func(g Gomega) string { return f.configMap(g, name).Data["value"] }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(want), name)
	}

	// A full sync applies the rest.
	request("4")
	app = f.waitApplied("app", sha2)
	g.Expect(f.configMap(g, "b").Data["value"]).To(Equal("2"))
	g.Expect(app.Status.SelectiveSync).To(BeNil())
}
