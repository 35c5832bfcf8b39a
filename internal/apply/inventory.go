package apply

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Entry is one inventory item, the same shape as api/v1beta1.InventoryEntry.
type Entry struct {
	// ID is "<namespace>_<name>_<group>_<kind>" (Flux's and cli-utils' format; the
	// namespace is empty for cluster-scoped objects, the group for the core group).
	ID string
	// Version is the object's apiVersion ("v1", "apps/v1"). A bare version is read
	// as well, as Flux stores it.
	Version string
}

// EntryOf returns the inventory entry of obj.
func EntryOf(obj *unstructured.Unstructured) Entry {
	return Entry{ID: object.UnstructuredToObjMetadata(obj).String(), Version: obj.GetAPIVersion()}
}

// entryOfChange returns the inventory entry of an object that ssa reported on.
func entryOfChange(e ssa.ChangeSetEntry) Entry {
	gv := schema.GroupVersion{Group: e.ObjMetadata.GroupKind.Group, Version: e.GroupVersion}
	return Entry{ID: e.ObjMetadata.String(), Version: gv.String()}
}

// ObjMetadata parses the ID into namespace, name, group and kind.
func (e Entry) ObjMetadata() (object.ObjMetadata, error) {
	m, err := object.ParseObjMetadata(e.ID)
	if err != nil {
		return m, fmt.Errorf("parsing inventory entry %q: %w", e.ID, err)
	}
	return m, nil
}

// GroupVersionKind returns the entry's group (from the ID), version and kind.
func (e Entry) GroupVersionKind() (schema.GroupVersionKind, error) {
	m, err := e.ObjMetadata()
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	version := e.Version
	if i := strings.LastIndex(version, "/"); i >= 0 {
		version = version[i+1:]
	}
	if version == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("inventory entry %q has no version", e.ID)
	}
	return m.GroupKind.WithVersion(version), nil
}

// Subject returns "Kind/namespace/name" ("Kind/name" for cluster-scoped objects),
// or the raw ID when it cannot be parsed.
func (e Entry) Subject() string {
	m, err := e.ObjMetadata()
	if err != nil {
		return e.ID
	}
	return utils.FmtObjMetadata(m)
}

// object returns an unstructured object that carries only the entry's identity.
func (e Entry) object() (*unstructured.Unstructured, error) {
	gvk, err := e.GroupVersionKind()
	if err != nil {
		return nil, err
	}
	m, _ := e.ObjMetadata() // parsed above
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u, nil
}

// Stale returns the entries of old whose ID is not in new (what to prune), in reverse
// apply order: namespaced objects first, then Namespaces, then CRDs last. A changed
// version alone does not make an entry stale. Entries whose ID cannot be parsed come
// last, so that pruning reports them.
func Stale(old, new []Entry) []Entry {
	keep := make(map[string]bool, len(new))
	for _, e := range new {
		keep[e.ID] = true
	}
	var (
		metas    []object.ObjMetadata
		byMeta   = map[object.ObjMetadata]Entry{}
		unparsed []Entry
	)
	for _, e := range old {
		if keep[e.ID] {
			continue
		}
		keep[e.ID] = true // drop duplicates in old
		m, err := e.ObjMetadata()
		if err != nil {
			unparsed = append(unparsed, e)
			continue
		}
		metas = append(metas, m)
		byMeta[m] = e
	}
	// ssa's order is the apply order (CRDs, Namespaces, ... first); reversed, it is
	// the order that deletes dependents before what they depend on.
	sort.Sort(sort.Reverse(ssa.SortableMetas(metas)))
	stale := make([]Entry, 0, len(metas)+len(unparsed))
	for _, m := range metas {
		stale = append(stale, byMeta[m])
	}
	return append(stale, unparsed...)
}

// Action is what an apply or a prune did to one object.
type Action string

// The actions of a Change: ssa's, and OrphanedAction (prune_guard.go).
const (
	CreatedAction    Action = "created"
	ConfiguredAction Action = "configured"
	UnchangedAction  Action = "unchanged"
	DeletedAction    Action = "deleted"
)

// Change is what happened to one object.
type Change struct {
	Entry
	// Subject is "Kind/namespace/name" (no namespace part for cluster-scoped objects).
	Subject string
	// Action is ssa's action (CreatedAction, ConfiguredAction, UnchangedAction or
	// DeletedAction), or OrphanedAction.
	Action Action
	// Message says why, for OrphanedAction.
	Message string
}

func changeOf(e ssa.ChangeSetEntry) Change {
	return Change{Entry: entryOfChange(e), Subject: e.Subject, Action: Action(e.Action.String())}
}

// Result is the outcome of an Apply.
type Result struct {
	// Changes has one item per object, in apply order.
	Changes []Change
	// Inventory lists every applied object, in apply order.
	Inventory []Entry

	// unchanged holds the IDs of the objects Options.Unchanged vouched for.
	unchanged map[string]bool
	// cachedOwners holds the IDs of the new objects whose owner check the watch cache
	// answered (Options.Owners): one that turns out to exist is checked again on the
	// live copy the apply reads anyway, with released.
	cachedOwners map[string]bool
	released     ReleasedFunc
	// previous holds the IDs of Options.Previous: objects the last sync applied. Others
	// are most likely new, and their dry-run asks for metadata only (see plan).
	previous map[string]bool
	// fresh holds the IDs of the objects that the whole set's dry-run (a set of several
	// stages) found new: their apply needs no second dry-run (see plan).
	fresh map[string]bool
}

// Count returns how many changes have the given action.
func (r *Result) Count(action Action) int {
	if r == nil {
		return 0
	}
	n := 0
	for _, c := range r.Changes {
		if c.Action == action {
			n++
		}
	}
	return n
}

// add records ssa's change set entries.
func (r *Result) add(entries []ssa.ChangeSetEntry) {
	for _, e := range entries {
		c := changeOf(e)
		r.Changes = append(r.Changes, c)
		r.Inventory = append(r.Inventory, c.Entry)
	}
}

// EntriesOf returns the entries of an Application's status.inventory (none when nil):
// the one conversion from the API's inventory to apply's entries.
func EntriesOf(inv *gitsyncv1.Inventory) []Entry {
	if inv == nil {
		return nil
	}
	out := make([]Entry, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		out = append(out, EntryFrom(e))
	}
	return out
}

// EntryFrom converts one API inventory entry.
func EntryFrom(e gitsyncv1.InventoryEntry) Entry { return Entry{ID: e.ID, Version: e.V} }

// InventoryOf returns entries as an Application's status.inventory.
func InventoryOf(entries []Entry) *gitsyncv1.Inventory {
	inv := &gitsyncv1.Inventory{Entries: make([]gitsyncv1.InventoryEntry, 0, len(entries))}
	for _, e := range entries {
		inv.Entries = append(inv.Entries, gitsyncv1.InventoryEntry{ID: e.ID, V: e.Version})
	}
	return inv
}
