package desired

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// recorded is the desired state of one Application, kept small: a slice sorted by
// inventory ID (no map, no ID string per object) of references whose repeated strings
// (group, version, kind, namespace) are shared, each with its object's JSON at its
// exact size.
type recorded []stored

// record makes the recorded state of objs; of objects with the same inventory ID, the
// last one is kept.
func record(objs []*unstructured.Unstructured) (recorded, error) {
	rec := make(recorded, 0, len(objs))
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", apply.Subject(o), err)
		}
		rec = append(rec, stored{ref: compactRef(drift.RefOf(o)), raw: bytes.Clone(raw)})
	}
	slices.SortStableFunc(rec, func(a, b stored) int { return compareID(a.ref, b.ref) })
	// Keep the last of equal IDs, as a map by ID would.
	out := rec[:0]
	for i, d := range rec {
		if i+1 < len(rec) && compareID(d.ref, rec[i+1].ref) == 0 {
			continue
		}
		out = append(out, d)
	}
	clear(rec[len(out):])
	return slices.Clip(out), nil
}

// find returns the recorded object of ref's inventory ID.
func (r recorded) find(ref drift.ObjectRef) (stored, bool) {
	i, ok := slices.BinarySearchFunc(r, ref, func(d stored, ref drift.ObjectRef) int { return compareID(d.ref, ref) })
	if !ok {
		return stored{}, false
	}
	return r[i], true
}

// compareID orders references as their inventory IDs identify them (the version aside).
func compareID(a, b drift.ObjectRef) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.GVK.Group, b.GVK.Group), strings.Compare(a.GVK.Kind, b.GVK.Kind))
}

// compactRef shares ref's repeated strings and copies its name out of whatever larger
// value it points into (a render's buffers).
func compactRef(ref drift.ObjectRef) drift.ObjectRef {
	ref.GVK.Group, ref.GVK.Version, ref.GVK.Kind = intern(ref.GVK.Group), intern(ref.GVK.Version), intern(ref.GVK.Kind)
	ref.Namespace, ref.Name = intern(ref.Namespace), strings.Clone(ref.Name)
	return ref
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
