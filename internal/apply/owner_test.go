package apply

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// An object labelled for an Application that released it is relabelled in place (same
// UID), whether it is read with a GET or found by the LIST of a batch; one that is not
// released is still a conflict.
func TestApplyTakesOverReleasedObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, n := range []int{1, listThreshold + 1} {
		t.Run(fmt.Sprintf("%d objects", n), func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := env.Namespace(t)
			x, y := Owner{Name: "x", Namespace: ns}, Owner{Name: "y", Namespace: ns}
			var objs []*unstructured.Unstructured
			for i := range n {
				objs = append(objs, configMap(t, ns, fmt.Sprintf("cm-%d", i), "x"))
			}
			_, err := newManager(x).Apply(ctx, objs, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			uid := current(t, objs[0]).GetUID()

			notReleased := func(context.Context, types.NamespacedName, string) (bool, error) { return false, nil }
			_, err = newManager(y).Apply(ctx, objs, Options{OwnerReleased: notReleased})
			var conflict *ConflictError
			g.Expect(errors.As(err, &conflict)).To(BeTrue(), "error: %v", err)
			g.Expect(current(t, objs[0]).GetLabels()).To(Equal(x.Labels()))

			_, err = newManager(y).Apply(ctx, objs, Options{OwnerReleased: func(_ context.Context, owner types.NamespacedName, _ string) (bool, error) {
				return false, errors.New("cannot tell")
			}})
			g.Expect(err).To(MatchError(ContainSubstring("cannot tell")))

			var asked []string
			released := func(_ context.Context, owner types.NamespacedName, id string) (bool, error) {
				g.Expect(owner).To(Equal(types.NamespacedName{Namespace: ns, Name: "x"}))
				asked = append(asked, id)
				return true, nil
			}
			objs[0] = configMap(t, ns, "cm-0", "y")
			res, err := newManager(y).Apply(ctx, objs, Options{OwnerReleased: released})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(asked).To(HaveLen(n))
			g.Expect(res.Count("configured")).To(Equal(n))
			got := current(t, objs[0])
			g.Expect(got.GetUID()).To(Equal(uid))
			g.Expect(got.GetLabels()).To(Equal(y.Labels()))
			g.Expect(got.Object["data"]).To(Equal(map[string]any{"key": "y"}))

			// x's prune of what it no longer has leaves y's objects alone.
			changes, err := newManager(x).Prune(ctx, Stale(entriesOf(objs), nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changes).To(BeEmpty())
			g.Expect(current(t, objs[0]).GetUID()).To(Equal(uid))
		})
	}
}

func entriesOf(objs []*unstructured.Unstructured) []Entry {
	entries := make([]Entry, len(objs))
	for i, o := range objs {
		entries[i] = EntryOf(o)
	}
	return entries
}
