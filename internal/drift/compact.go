package drift

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The watch caches hold the metadata of every managed object, for as long as it is
// managed: what they keep per object is most of gitsync's memory at rest. compact
// (the informers' transform) keeps only what the readers of the cache use — name,
// namespace and resourceVersion (the handlers), the labels (OwnerOf, Fingerprint), the
// managedFields entries of the main resource (Untouched, Fingerprint) — and shares what
// objects have in common instead of holding a copy per object: the labels map of a set
// of labels (the objects of one Application mostly carry the same), a managedFields
// entry's fields (the objects of one kind rendered alike own the same fields) and time,
// and the strings, and the list of managedFields entries itself when equal. The cached
// objects are read only, as any informer's are.

// compact is the cache.TransformFunc of the watches: it makes the Meta the cache keeps.
func (w *Watches) compact(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		// A Meta already (a cache's Replace transforms what the reflector's own store
		// transformed), or a tombstone, whose object was transformed when it was added.
		return obj, nil
	}
	// A new list of the entries kept (the decoder's has the status ones too).
	entries := make([]metav1.ManagedFieldsEntry, 0, len(m.ManagedFields))
	for _, e := range m.ManagedFields {
		if e.Subresource == "status" {
			continue // never drift: neither Untouched nor Fingerprint reads it
		}
		e.Manager, e.APIVersion = intern(e.Manager), intern(e.APIVersion)
		e.Operation = metav1.ManagedFieldsOperationType(intern(string(e.Operation)))
		e.FieldsType, e.Subresource = intern(e.FieldsType), intern(e.Subresource)
		e.FieldsV1, e.Time = w.shared.fields(e.FieldsV1), w.shared.time(e.Time)
		entries = append(entries, e)
	}
	// The name and resourceVersion in one new string: the decoder's two are small
	// allocations scattered among its garbage, each keeping a span of it in use.
	nameRV := m.Name + m.ResourceVersion
	return &Meta{
		name:            nameRV[:len(m.Name)],
		namespace:       intern(m.Namespace),
		resourceVersion: nameRV[len(m.Name):],
		labels:          w.shared.labels(m.Labels),
		managedFields:   w.shared.managedFields(entries),
	}, nil
}

// intern returns the canonical copy of s (released once no object holds it).
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// sharedValues hands out one copy of equal labels maps, managedFields lists, field sets
// and times. Its tables are forgotten when they outgrow twice what they held after the
// last reset (objects keep the copies they have; later ones share new copies), so
// values no object holds any longer do not pile up.
type sharedValues struct {
	mu     sync.Mutex
	labelm map[string]map[string]string
	entrym map[string][]metav1.ManagedFieldsEntry
	fieldm map[string]*metav1.FieldsV1
	timem  map[int64]*metav1.Time
	limit  int
}

const minSharedLimit = 4096

func (s *sharedValues) reset() {
	s.labelm = map[string]map[string]string{}
	s.entrym = map[string][]metav1.ManagedFieldsEntry{}
	s.fieldm = map[string]*metav1.FieldsV1{}
	s.timem = map[int64]*metav1.Time{}
}

// room forgets the tables when they are full; the caller holds s.mu.
func (s *sharedValues) room() {
	n := len(s.labelm) + len(s.entrym) + len(s.fieldm) + len(s.timem)
	if s.labelm != nil && n < max(s.limit, minSharedLimit) {
		return
	}
	s.reset()
	s.limit = 2 * n
}

func (s *sharedValues) labels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	keys := make([]string, 0, len(l))
	size := 0
	for k, v := range l {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	key := b.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.labelm[key]; ok {
		return m
	}
	s.room()
	m := make(map[string]string, len(l))
	for k, v := range l {
		m[intern(k)] = intern(v)
	}
	s.labelm[key] = m
	return m
}

// managedFields returns the shared copy of entries, whose values are shared already
// (a list of equal entries: the objects of one kind applied alike in the same second).
func (s *sharedValues) managedFields(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if len(entries) == 0 {
		return nil
	}
	var b strings.Builder
	for _, e := range entries {
		var when int64
		if e.Time != nil {
			when = e.Time.UnixNano()
		}
		var fields []byte
		if e.FieldsV1 != nil {
			fields = e.FieldsV1.Raw
		}
		for _, part := range []string{e.Manager, string(e.Operation), e.APIVersion, e.FieldsType, e.Subresource, strconv.FormatInt(when, 10), string(fields)} {
			b.WriteString(part)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	key := b.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.entrym[key]; ok {
		return c
	}
	s.room()
	c := slices.Clip(entries)
	s.entrym[key] = c
	return c
}

func (s *sharedValues) fields(f *metav1.FieldsV1) *metav1.FieldsV1 {
	if f == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.fieldm[string(f.Raw)]; ok {
		return c
	}
	s.room()
	c := &metav1.FieldsV1{Raw: append([]byte(nil), f.Raw...)}
	s.fieldm[string(c.Raw)] = c
	return c
}

func (s *sharedValues) time(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	key := t.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.timem[key]; ok && c.Equal(t) {
		return c
	}
	s.room()
	c := t.DeepCopy()
	s.timem[key] = c
	return c
}
