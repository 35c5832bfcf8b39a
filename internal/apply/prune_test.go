package apply

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
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
