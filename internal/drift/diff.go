package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
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
//     Git does not set (spec.replicas under an HPA) is not drift;
//   - never status, nor metadata.managedFields, resourceVersion, generation, uid,
//     creationTimestamp, or the kubectl.kubernetes.io/last-applied-configuration
//     annotation;
//   - minus the ignore pointers (RFC 6901, e.g. "/spec/replicas", "/data/key"): a
//     drifted field equal to or under an ignored pointer is dropped. List items may be
//     given by index in desired or live ("/spec/template/spec/containers/0/image") or in
//     Field.Path's key form ("/spec/template/spec/containers/name=web/image").
//
// The owner labels (gitsync.dev/application, gitsync.dev/application-namespace) are
// drift when they are missing or changed, even if an ignore pointer covers them.
// A field gitsync manages that is missing from live is drift.
//
// Values are never returned, so Secret data cannot leak through a Field. Diff fails when
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

	leaves := owned.Leaves()
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
		if !forced.Has(p) && (underAny(path, ignored) ||
			(want.found && underAny(want.indexTokens, ignored)) ||
			(got.found && underAny(got.indexTokens, ignored))) {
			return
		}
		fields = append(fields, Field{Path: joinPointer(path), Managers: writersOf(p, others)})
	})
	slices.SortFunc(fields, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return fields, nil
}

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

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
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

// location is what a fieldpath.Path points at in an object.
type location struct {
	found bool
	value any
	// indexTokens is the RFC 6901 form of the path, list items given by index.
	indexTokens []string
}

// locate follows p in obj.
func locate(obj map[string]any, p fieldpath.Path) location {
	var cur any = obj
	tokens := make([]string, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return location{}
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return location{}
			}
			tokens = append(tokens, *pe.FieldName)
		case pe.Key != nil, pe.Value != nil, pe.Index != nil:
			list, ok := cur.([]any)
			if !ok {
				return location{}
			}
			i := listIndex(list, pe)
			if i < 0 {
				return location{}
			}
			cur = list[i]
			tokens = append(tokens, strconv.Itoa(i))
		default:
			return location{}
		}
	}
	return location{found: true, value: cur, indexTokens: tokens}
}

// listIndex returns the index of the item of list that pe selects, or -1.
func listIndex(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range list {
			if value.Equals(*pe.Value, value.NewValueInterface(item)) {
				return i
			}
		}
	case pe.Key != nil:
	items:
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, k := range *pe.Key {
				v, ok := m[k.Name]
				if !ok || !value.Equals(k.Value, value.NewValueInterface(v)) {
					continue items
				}
			}
			return i
		}
	}
	return -1
}

// formatPathTokens returns p as unescaped JSON pointer tokens in Field.Path's format.
func formatPathTokens(p fieldpath.Path) []string {
	tokens := make([]string, len(p))
	for i, pe := range p {
		switch {
		case pe.FieldName != nil:
			tokens[i] = *pe.FieldName
		case pe.Key != nil:
			parts := make([]string, len(*pe.Key))
			for j, k := range *pe.Key {
				parts[j] = k.Name + "=" + formatKeyValue(k.Value)
			}
			tokens[i] = strings.Join(parts, ",")
		case pe.Value != nil:
			tokens[i] = formatKeyValue(*pe.Value)
		case pe.Index != nil:
			tokens[i] = strconv.Itoa(*pe.Index)
		default:
			tokens[i] = pe.String()
		}
	}
	return tokens
}

// formatKeyValue writes a list key or set value: strings bare when that cannot be
// mistaken for another value or for the separators, JSON otherwise.
func formatKeyValue(v value.Value) string {
	if v.IsString() {
		s := v.AsString()
		if s != "" && !strings.ContainsAny(s, `,="`) && !looksLikeJSONLiteral(s) {
			return s
		}
	}
	b, err := json.Marshal(v.Unstructured())
	if err != nil {
		return value.ToString(v)
	}
	return string(b)
}

func looksLikeJSONLiteral(s string) bool {
	switch s {
	case "true", "false", "null":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// joinPointer escapes tokens (RFC 6901) and joins them into a pointer.
func joinPointer(tokens []string) string {
	var b strings.Builder
	r := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(r.Replace(t))
	}
	return b.String()
}

// parsePointer splits an RFC 6901 pointer into unescaped tokens. "" is the whole object.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return []string{}, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("not a JSON pointer: must start with \"/\"")
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("not a JSON pointer: \"~\" must be followed by 0 or 1")
			}
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return tokens, nil
}

// underAny says whether path equals or is under one of prefixes.
func underAny(path []string, prefixes [][]string) bool {
	for _, prefix := range prefixes {
		if len(prefix) <= len(path) && slices.Equal(path[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}
