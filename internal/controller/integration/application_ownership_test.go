package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// pvcYAML is a PersistentVolumeClaim: what a delete and recreate would lose.
func pvcYAML(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`, name)
}

func inventoryIDs(app *gitsyncv1.Application) []string {
	var ids []string
	for _, e := range app.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// One commit moves objects from Application x's path to y's (both with prune, both on
// the same repository): they keep their UIDs, whichever Application syncs first. The
// move is made back and forth so that both orders have a chance to happen.
func TestApplicationMoveObjectsBetweenApplications(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{
		"x/data.yaml": pvcYAML("data"),
		"x/cm.yaml":   configMapYAML("moved", "1"),
		"x/x.yaml":    configMapYAML("x-only", "1"),
		"y/y.yaml":    configMapYAML("y-only", "1"),
	}
	f, sha := newAppFixture(t, files)
	for _, name := range []string{"x", "y"} {
		f.app(name, func(a *gitsyncv1.Application) { a.Spec.Path = name; a.Spec.Prune = true })
	}
	f.waitApplied("x", sha)
	f.waitApplied("y", sha)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(f.exists(g, pvc, "data")).To(BeTrue())
	uids := map[string]types.UID{"data": pvc.UID, "moved": f.configMap(g, "moved").UID}

	from, to := "x", "y"
	for round := range 4 {
		sha = f.repo.Commit("main", fmt.Sprintf("move %d", round), map[string]string{
			to + "/data.yaml": pvcYAML("data"),
			to + "/cm.yaml":   configMapYAML("moved", "1"),
		}, from+"/data.yaml", from+"/cm.yaml")
		target := f.waitApplied(to, sha)
		source := f.waitApplied(from, sha)

		g.Expect(f.exists(g, pvc, "data")).To(BeTrue(), "round %d", round)
		g.Expect(pvc.UID).To(Equal(uids["data"]), "round %d: the claim was recreated", round)
		g.Expect(pvc.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, to))
		cm := f.configMap(g, "moved")
		g.Expect(cm.UID).To(Equal(uids["moved"]), "round %d", round)
		g.Expect(cm.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, to))
		g.Expect(inventoryIDs(target)).To(ContainElements(f.ns+"_data__PersistentVolumeClaim", f.ns+"_moved__ConfigMap"))
		g.Expect(inventoryIDs(source)).NotTo(ContainElement(f.ns + "_moved__ConfigMap"))
		g.Expect(inventoryIDs(source)).NotTo(ContainElement(f.ns + "_data__PersistentVolumeClaim"))
		from, to = to, from
	}
	g.Expect(f.configMap(g, "x-only").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "x"))
	g.Expect(f.configMap(g, "y-only").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "y"))
}

// Renaming an Application: the new one is created on the same path (it waits, the old
// one still renders the objects), then the old one is deleted with prune: the objects
// are handed over, not deleted.
func TestApplicationRenameKeepsObjects(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"data.yaml": pvcYAML("data"), "cm.yaml": configMapYAML("cfg", "1")})
	f.app("old", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("old", sha)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(f.exists(g, pvc, "data")).To(BeTrue())
	uid := pvc.UID

	f.app("new", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	g.Expect(f.waitNotReady("new", gitsyncv1.ApplyFailedReason)).To(ContainSubstring("managed by Application " + f.ns + "/old"))

	g.Expect(env.Client.Delete(context.Background(), f.get(g, "old"))).To(Succeed())
	app := f.waitApplied("new", sha)
	g.Expect(f.exists(g, &gitsyncv1.Application{}, "old")).To(BeFalse())
	g.Expect(f.exists(g, pvc, "data")).To(BeTrue())
	g.Expect(pvc.UID).To(Equal(uid))
	g.Expect(pvc.Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "new"))
	g.Expect(f.configMap(g, "cfg").Labels).To(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "new"))
	g.Expect(inventoryIDs(app)).To(ConsistOf(f.ns+"_data__PersistentVolumeClaim", f.ns+"_cfg__ConfigMap"))
}

func annotatedConfigMapYAML(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  annotations:\n    %s: %q\ndata:\n  value: \"1\"\n", name, key, value)
}

// gitsync.dev/prune: disabled (and Flux's and Argo CD's equivalents) keep an object when
// it leaves Git and when its Application is deleted with prune.
func TestApplicationPruneDisabled(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"kept.yaml":  annotatedConfigMapYAML("kept", gitsyncv1.PruneAnnotation, gitsyncv1.PruneDisabled),
		"gone.yaml":  configMapYAML("gone", "1"),
		"flux.yaml":  annotatedConfigMapYAML("flux", "kustomize.toolkit.fluxcd.io/prune", "disabled"),
		"argo.yaml":  annotatedConfigMapYAML("argo", "argocd.argoproj.io/sync-options", "Prune=false"),
		"owned.yaml": configMapYAML("owned", "1"),
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)

	sha = f.repo.Commit("main", "remove two", nil, "kept.yaml", "gone.yaml")
	app := f.waitApplied("app", sha)
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "kept")).To(BeTrue())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "gone")).To(BeFalse())
	g.Expect(inventoryIDs(app)).NotTo(ContainElement(f.ns + "_kept__ConfigMap"))
	g.Expect(app.Status.History[0].Pruned).To(Equal(1))

	g.Expect(env.Client.Delete(context.Background(), app)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return f.exists(g, &gitsyncv1.Application{}, "app") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "owned")).To(BeFalse())
	for _, name := range []string{"kept", "flux", "argo"} {
		g.Expect(f.exists(g, &corev1.ConfigMap{}, name)).To(BeTrue(), name)
	}
}
