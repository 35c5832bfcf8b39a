package drift

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Why not fluxcd/pkg/ssa/jsondiff: it compares whole objects (after removing a fixed
// list of metadata) and reports JSON-patch operations with values; drift needs only the
// fields gitsync's field manager owns, the managers that wrote each of them, and no
// values. The ownership sets come from structured-merge-diff's fieldpath, as the API
// server writes them.

// Field is one drifted field.
//
// Path is a JSON pointer (RFC 6901: segments joined by "/", "~" written "~0" and "/"
// written "~1") in which list items are named the way managedFields names them, so that
// a path stays the same when the list is reordered:
//   - a map key or struct field is its name: /metadata/labels/gitsync.dev~1application;
//   - an item of a list keyed by merge keys (k:{"name":"web"}) is key=value, several keys
//     sorted by name and joined by ",": /spec/template/spec/containers/name=web/image,
//     /spec/template/spec/containers/name=web/ports/containerPort=8080,protocol=TCP;
//   - an item of a set (v:"example.com/cleanup") is its value:
//     /metadata/finalizers/example.com~1cleanup;
//   - an item of a list addressed by position (i:0) is its index: /spec/args/0.
//
// Key and set values that are strings are written bare unless they are empty, contain
// ",", "=" or `"`, or read as a JSON number, true, false or null; then they are written
// as JSON strings (name="a,b", "8080"). Other values are written as JSON (8080, true).
type Field struct {
	// Path is the drifted field (format above).
	Path string
	// Managers are the field managers, from the live object's managedFields and other
	// than gitsync, that own the drifted field (they wrote the value that is there now),
	// sorted and without duplicates. Empty when nobody else owns it, e.g. when the field
	// was removed.
	Managers []string
	// ValueHash is a short keyed hash of the value live holds at Path ("" when live
	// holds none), so that Fights can tell the same value written back again from a new
	// edit. It is not the value and cannot be turned back into it, and its key is random
	// per process: compare it only with hashes from the same process.
	ValueHash string
}

// excludedPaths are never drift, whatever the managedFields say (token form).
var excludedPaths = [][]string{
	{"status"},
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "uid"},
	{"metadata", "creationTimestamp"},
	{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"},
}

// ownerLabels are always compared, and ignore rules do not apply to them: an object
// without them falls out of the label-selected watch, so gitsync would stop seeing it.
var ownerLabels = []string{gitsyncv1.ApplicationLabel, gitsyncv1.ApplicationNamespaceLabel}

// Diff compares live (the object as it is in the cluster, with metadata.managedFields)
// with desired (the server-side dry-run apply of Git's version of the object: what the
// object would be once gitsync re-applied it) and returns the fields that differ, sorted
// by Path. Only these count:
//   - fields that gitsync manages: those in the managedFields entry of field manager
//     "gitsync", operation Apply, of desired. A field that another controller owns and
//     Git does not set (spec.replicas under an HPA) is not drift. A Secret's
//     stringData.k, which the API server stores as data.k, is compared (and reported) as
//     /data/k;
//   - never status, nor metadata.managedFields, resourceVersion, generation, uid,
//     creationTimestamp, or the kubectl.kubernetes.io/last-applied-configuration
//     annotation;
//   - minus the ignore pointers (RFC 6901, e.g. "/spec/replicas", "/data/key"): a
//     drifted field equal to or under an ignored pointer is dropped. List items may be
//     given by index in desired or live ("/spec/template/spec/containers/0/image") or in
//     Field.Path's key form ("/spec/template/spec/containers/name=web/image"); a
//     Secret's /data/k written as stringData is also ignored by "/stringData/k".
//
// The owner labels (gitsync.dev/application, gitsync.dev/application-namespace) are
// drift when they are missing or changed, even if an ignore pointer covers them.
// A field gitsync manages that is missing from live is drift.
//
// Values are never returned, so Secret data cannot leak through a Field (ValueHash is a
// keyed hash of live's value, for Fights only). Diff fails when
// desired has no Apply entry of gitsync, when managedFields cannot be decoded, or when an
// ignore pointer is not a JSON pointer.
func Diff(live, desired *unstructured.Unstructured, ignore []string) ([]Field, error) {
	if live == nil || desired == nil {
		return nil, fmt.Errorf("diffing: live and desired objects are both required")
	}
	ignored := make([][]string, 0, len(ignore))
	for _, p := range ignore {
		tokens, err := parsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("ignore rule %q: %w", p, err)
		}
		ignored = append(ignored, tokens)
	}

	owned, err := gitsyncSet(desired)
	if err != nil {
		return nil, err
	}
	others, err := otherManagers(live)
	if err != nil {
		return nil, err
	}

	leaves, writtenAs := storedLeaves(desired, owned.Leaves())
	forced := fieldpath.NewSet()
	for _, label := range ownerLabels {
		if _, ok := desired.GetLabels()[label]; ok {
			p := fieldpath.MakePathOrDie("metadata", "labels", label)
			leaves.Insert(p)
			forced.Insert(p)
		}
	}

	var fields []Field
	leaves.Iterate(func(p fieldpath.Path) {
		path := formatPathTokens(p)
		if underAny(path, excludedPaths) {
			return
		}
		want := locate(desired.Object, p)
		got := locate(live.Object, p)
		if !drifted(want, got, p, others) {
			return
		}
		pointer := joinPointer(path)
		alias, written := writtenAs[pointer]
		if !forced.Has(p) && (underAny(path, ignored) ||
			(want.found && underAny(want.indexTokens, ignored)) ||
			(got.found && underAny(got.indexTokens, ignored)) ||
			(written && underAny(formatPathTokens(alias), ignored))) {
			return
		}
		managers := writersOf(p, others)
		if written {
			managers = slices.Compact(slices.Sorted(slices.Values(append(managers, writersOf(alias, others)...))))
		}
		fields = append(fields, Field{Path: pointer, Managers: managers, ValueHash: valueHash(got)})
	})
	slices.SortFunc(fields, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return fields, nil
}

// drifted says whether the field at p, owned by gitsync, differs between desired (want)
// and live (got).
func drifted(want, got location, p fieldpath.Path, others []managerSet) bool {
	if want.found != got.found {
		return true
	}
	if !want.found || value.Equals(value.NewValueInterface(want.value), value.NewValueInterface(got.value)) {
		return false
	}
	// gitsync owns an empty map or list (Git wrote "data: {}") with nothing under it.
	// When other managers own entries under it in live, the map or list is granular and
	// those entries are theirs, not a change of gitsync's field. An atomic one is owned
	// whole, so nobody owns entries under it.
	if emptyContainer(want.value) && sameKind(want.value, got.value) {
		for _, o := range others {
			if sub := descend(o.set, p); sub != nil && !sub.Empty() {
				return false
			}
		}
	}
	return true
}

func emptyContainer(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func sameKind(a, b any) bool {
	switch a.(type) {
	case map[string]any:
		_, ok := b.(map[string]any)
		return ok
	case []any:
		_, ok := b.([]any)
		return ok
	}
	return false
}
