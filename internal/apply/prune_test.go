package apply

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestPruneDeletesOnlyWhatCarriesOurLabels(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	ours, relabelled, unlabelled, kept := configMap(t, ns, "ours", "1"), configMap(t, ns, "relabelled", "1"),
		configMap(t, ns, "unlabelled", "1"), configMap(t, ns, "kept", "1")
	res, err := m.Apply(ctx, []*unstructured.Unstructured{ours, relabelled, unlabelled, kept}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	// Someone hands one object to another Application and takes the labels off another.
	obj := current(t, relabelled)
	obj.SetLabels(map[string]string{gitsyncv1.ApplicationLabel: "other", gitsyncv1.ApplicationNamespaceLabel: ns})
	g.Expect(env.Client.Update(ctx, obj)).To(Succeed())
	obj = current(t, unlabelled)
	obj.SetLabels(nil)
	g.Expect(env.Client.Update(ctx, obj)).To(Succeed())

	missing := Entry{ID: ns + "_missing__ConfigMap", Version: "v1"}
	missingKind := Entry{ID: ns + "_w_gone.example.com_Widget", Version: "gone.example.com/v1"}
	stale := Stale(append(res.Inventory, missing, missingKind), []Entry{EntryOf(kept)})
	g.Expect(stale).To(HaveLen(5))

	changes, err := m.Prune(ctx, stale)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(Equal([]Change{{Entry: EntryOf(ours), Subject: "ConfigMap/" + ns + "/ours", Action: "deleted"}}))
	g.Expect(exists(t, ours)).To(BeFalse())
	g.Expect(exists(t, relabelled)).To(BeTrue())
	g.Expect(exists(t, unlabelled)).To(BeTrue())
	g.Expect(exists(t, kept)).To(BeTrue())

	// Nothing left to delete.
	changes, err = m.Prune(ctx, stale)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(BeEmpty())
}

func TestPruneKeepsObjectsWithPruneDisabled(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	annotated := func(name, key, value string) *unstructured.Unstructured {
		cm := configMap(t, ns, name, "1")
		cm.SetAnnotations(map[string]string{key: value})
		return cm
	}
	gitsync := annotated("gitsync", gitsyncv1.PruneAnnotation, gitsyncv1.PruneDisabled)
	flux := annotated("flux", "kustomize.toolkit.fluxcd.io/prune", "disabled")
	argo := annotated("argo", "argocd.argoproj.io/sync-options", "ServerSideApply=true, Prune=false")
	enabled := annotated("enabled", gitsyncv1.PruneAnnotation, "enabled")
	res, err := m.Apply(ctx, []*unstructured.Unstructured{gitsync, flux, argo, enabled}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	// Everything leaves Git (or the Application is deleted: the same Prune of all).
	changes, err := m.Prune(ctx, Stale(res.Inventory, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(Equal([]Change{{Entry: EntryOf(enabled), Subject: "ConfigMap/" + ns + "/enabled", Action: "deleted"}}))
	g.Expect(exists(t, enabled)).To(BeFalse())
	for _, o := range []*unstructured.Unstructured{gitsync, flux, argo} {
		g.Expect(exists(t, o)).To(BeTrue(), o.GetName())
	}

	// The annotation is read from the live object: taking it off makes the object prunable.
	obj := current(t, gitsync)
	obj.SetAnnotations(nil)
	g.Expect(env.Client.Update(ctx, obj)).To(Succeed())
	changes, err = m.Prune(ctx, Stale(res.Inventory, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(HaveLen(1))
	g.Expect(exists(t, gitsync)).To(BeFalse())
}

func TestPruneLeavesClaimedObjects(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	moved, gone := configMap(t, ns, "moved", "1"), configMap(t, ns, "gone", "1")
	res, err := m.Apply(ctx, []*unstructured.Unstructured{moved, gone}, Options{})
	g.Expect(err).NotTo(HaveOccurred())

	var asked []string
	changes, err := m.Prune(ctx, Stale(res.Inventory, nil), PruneOptions{Claimed: func(_ context.Context, id string) (bool, error) {
		asked = append(asked, id)
		return id == EntryOf(moved).ID, nil
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asked).To(ConsistOf(EntryOf(moved).ID, EntryOf(gone).ID))
	g.Expect(changes).To(HaveLen(1))
	g.Expect(changes[0].Subject).To(Equal("ConfigMap/" + ns + "/gone"))
	g.Expect(exists(t, moved)).To(BeTrue())
	g.Expect(current(t, moved).GetLabels()).To(Equal(m.owner.Labels()))

	// An error of the check keeps the object and is returned.
	_, err = m.Prune(ctx, Stale(res.Inventory, nil), PruneOptions{Claimed: func(context.Context, string) (bool, error) {
		return false, errors.New("boom")
	}})
	g.Expect(err).To(MatchError(ContainSubstring("boom")))
	g.Expect(exists(t, moved)).To(BeTrue())
}

func TestPruneDisabled(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{"gitsync.dev/prune": "disabled"}, true},
		{map[string]string{"gitsync.dev/prune": "Disabled"}, false},
		{map[string]string{"gitsync.dev/prune": "enabled"}, false},
		{map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"}, true},
		{map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"}, true},
		{map[string]string{"argocd.argoproj.io/sync-options": "Replace=true,Prune=false"}, true},
		{map[string]string{"argocd.argoproj.io/sync-options": "Prune=true"}, false},
		{map[string]string{"argocd.argoproj.io/sync-options": "Prune=confirm"}, false},
	} {
		if got := PruneDisabled(tc.annotations); got != tc.want {
			t.Errorf("PruneDisabled(%v) = %v, want %v", tc.annotations, got, tc.want)
		}
	}
}
