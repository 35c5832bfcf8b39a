package drift

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Ownership: the managedFields of desired and live, decoded into structured-merge-diff
// field sets, and who owns a path.

// managerSet is one field manager's fields, decoded.
type managerSet struct {
	manager string
	set     *fieldpath.Set
}

// gitsyncSet returns the union of desired's Apply entries of field manager gitsync (on
// the main resource, not a subresource).
func gitsyncSet(desired *unstructured.Unstructured) (*fieldpath.Set, error) {
	var owned *fieldpath.Set
	for _, e := range desired.GetManagedFields() {
		if e.Manager != gitsyncv1.FieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		s, err := decodeFields(e)
		if err != nil {
			return nil, err
		}
		if owned == nil {
			owned = s
		} else {
			owned = owned.Union(s)
		}
	}
	if owned == nil {
		return nil, fmt.Errorf("desired %s %s has no managedFields entry of field manager %q with operation Apply: expected a server-side dry-run apply result",
			desired.GetKind(), objectName(desired), gitsyncv1.FieldManager)
	}
	return owned, nil
}

// otherManagers decodes live's managedFields entries of every manager but gitsync.
func otherManagers(live *unstructured.Unstructured) ([]managerSet, error) {
	var out []managerSet
	for _, e := range live.GetManagedFields() {
		if e.Manager == gitsyncv1.FieldManager {
			continue
		}
		s, err := decodeFields(e)
		if err != nil {
			return nil, err
		}
		out = append(out, managerSet{manager: e.Manager, set: s})
	}
	return out, nil
}

func decodeFields(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := fieldpath.NewSet()
	if e.FieldsV1 == nil {
		return s, nil
	}
	if e.FieldsType != "FieldsV1" {
		return nil, fmt.Errorf("decoding managedFields of %q: unknown fieldsType %q", e.Manager, e.FieldsType)
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		return nil, fmt.Errorf("decoding managedFields of %q: %w", e.Manager, err)
	}
	return s, nil
}

// decodedSets keeps the decoded field sets of the managedFields that Untouched reads, by
// their JSON: the objects of one kind that one Application applies mostly carry equal
// sets (the same keys, other values), so a restart that checks 20,000 objects decodes a
// handful. The sets it hands out are shared: read them, never change them.
var decodedSets = struct {
	sync.Mutex
	m map[string]decodedSet
}{m: map[string]decodedSet{}}

// decodedSet is a managedFields entry's set and its leaves, each computed once.
type decodedSet struct{ set, leaves *fieldpath.Set }

// maxDecodedSets bounds decodedSets; it starts over when full.
const maxDecodedSets = 1024

// sharedFields is decodeFields through decodedSets.
func sharedFields(e metav1.ManagedFieldsEntry) (decodedSet, error) {
	decode := func() (decodedSet, error) {
		s, err := decodeFields(e)
		if err != nil {
			return decodedSet{}, err
		}
		return decodedSet{set: s, leaves: s.Leaves()}, nil
	}
	if e.FieldsV1 == nil || e.FieldsType != "FieldsV1" {
		return decode()
	}
	decodedSets.Lock()
	d, ok := decodedSets.m[string(e.FieldsV1.Raw)]
	decodedSets.Unlock()
	if ok {
		return d, nil
	}
	d, err := decode()
	if err != nil {
		return decodedSet{}, err
	}
	decodedSets.Lock()
	if len(decodedSets.m) >= maxDecodedSets {
		clear(decodedSets.m)
	}
	decodedSets.m[string(e.FieldsV1.Raw)] = d
	decodedSets.Unlock()
	return d, nil
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// writersOf returns the managers that own p, an ancestor of p that they own whole (a
// leaf of their set: an atomic map or list), or fields under p. Sorted, unique.
func writersOf(p fieldpath.Path, others []managerSet) []string {
	var names []string
	for _, o := range others {
		if owns(o.set, p) {
			names = append(names, o.manager)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func owns(s *fieldpath.Set, p fieldpath.Path) bool {
	if s.Has(p) {
		return true
	}
	if sub := descend(s, p); sub != nil && !sub.Empty() {
		return true
	}
	for i := 1; i < len(p); i++ {
		prefix := p[:i]
		if !s.Has(prefix) {
			continue
		}
		if sub := descend(s, prefix); sub == nil || sub.Empty() {
			return true
		}
	}
	return false
}

// descend returns the subset of s under p (p excluded), or nil when s has nothing under p.
func descend(s *fieldpath.Set, p fieldpath.Path) *fieldpath.Set {
	for _, pe := range p {
		var ok bool
		s, ok = s.Children.Get(pe)
		if !ok {
			return nil
		}
	}
	return s
}
