package desired

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unique"

	"github.com/klauspost/compress/s2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// recorded is the desired state of one Application, kept small (it is held for every
// managed object, while only the few objects a drift check looks at are needed whole):
// the references sorted by inventory ID (no map, no ID string per object), each with
// its kind as an index into the record's few kinds and its repeated strings (namespace)
// shared, and the objects' JSON compressed (see compressChunk) in chunks
// of up to chunkObjects objects in that order. Objects of one Application are much alike
// (the same keys, labels, namespace), so a chunk compresses to a fraction of its size,
// and a look-up expands one chunk only. A record is never changed: a new state is a new
// record.
type recorded struct {
	kinds  []schema.GroupVersionKind // each kind of the objects once
	refs   []recordedRef             // sorted by inventory ID
	chunks [][]byte
}

// recordedRef is an object's reference (its kind is kinds[kind]) and where its JSON is:
// 48 bytes, where a drift.ObjectRef and its span took 92.
type recordedRef struct {
	namespace, name string
	kind            uint32
	span
}

// span locates an object's JSON in the expanded chunk.
type span struct{ chunk, off, n uint32 }

const chunkObjects = 16

// record makes the recorded state of objs; of objects with the same inventory ID, the
// last one is kept, as a map by ID would.
func record(objs []*unstructured.Unstructured) (*recorded, error) {
	type item struct {
		ref drift.ObjectRef
		raw []byte
	}
	items := make([]item, 0, len(objs))
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", apply.Subject(o), err)
		}
		items = append(items, item{ref: drift.RefOf(o), raw: raw})
	}
	slices.SortStableFunc(items, func(a, b item) int { return compareID(a.ref, b.ref) })
	kept := items[:0]
	for i, it := range items {
		if i+1 < len(items) && compareID(it.ref, items[i+1].ref) == 0 {
			continue
		}
		kept = append(kept, it)
	}
	rec := &recorded{refs: make([]recordedRef, len(kept))}
	// The names are copied out of whatever larger values they point into (a render's
	// buffers) into one string: one allocation per record rather than a small one per
	// object, which would stay scattered among the render's garbage and keep its spans.
	var names strings.Builder
	size := 0
	for _, it := range kept {
		size += len(it.ref.Name)
	}
	names.Grow(size)
	for _, it := range kept {
		names.WriteString(it.ref.Name)
	}
	allNames, nameAt := names.String(), 0
	var plain bytes.Buffer
	for start := 0; start < len(kept); start += chunkObjects {
		plain.Reset()
		chunk := uint32(len(rec.chunks))
		for i := start; i < min(start+chunkObjects, len(kept)); i++ {
			ref := kept[i].ref
			rec.refs[i] = recordedRef{
				namespace: intern(ref.Namespace), name: allNames[nameAt : nameAt+len(ref.Name)], kind: rec.kindIndex(ref.GVK),
				span: span{chunk: chunk, off: uint32(plain.Len()), n: uint32(len(kept[i].raw))},
			}
			nameAt += len(ref.Name)
			plain.Write(kept[i].raw)
		}
		rec.chunks = append(rec.chunks, compressChunk(plain.Bytes()))
	}
	rec.kinds = slices.Clip(rec.kinds)
	return rec, nil
}

// kindIndex returns the index of gvk in r.kinds, adding it (its strings shared) if new.
func (r *recorded) kindIndex(gvk schema.GroupVersionKind) uint32 {
	if i := slices.Index(r.kinds, gvk); i >= 0 {
		return uint32(i)
	}
	r.kinds = append(r.kinds, schema.GroupVersionKind{Group: intern(gvk.Group), Version: intern(gvk.Version), Kind: intern(gvk.Kind)})
	return uint32(len(r.kinds) - 1)
}

// ref returns the reference of the i-th object.
func (r *recorded) ref(i int) drift.ObjectRef { return r.objectRef(r.refs[i]) }

func (r *recorded) objectRef(e recordedRef) drift.ObjectRef {
	return drift.ObjectRef{GVK: r.kinds[e.kind], Namespace: e.namespace, Name: e.name}
}

// objectRefs returns the references of every recorded object, in a new slice.
func (r *recorded) objectRefs() []drift.ObjectRef {
	refs := make([]drift.ObjectRef, len(r.refs))
	for i := range refs {
		refs[i] = r.ref(i)
	}
	return refs
}

// find returns the index of ref's inventory ID.
func (r *recorded) find(ref drift.ObjectRef) (int, bool) {
	if r == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(r.refs, ref, func(e recordedRef, ref drift.ObjectRef) int { return compareID(r.objectRef(e), ref) })
}

// reader reads the recorded objects, expanding each chunk once.
func (r *recorded) reader() *recordReader { return &recordReader{rec: r, plain: map[uint32][]byte{}} }

type recordReader struct {
	rec   *recorded
	plain map[uint32][]byte
}

// raw returns the JSON of the i-th object.
func (rr *recordReader) raw(i int) ([]byte, error) {
	s := rr.rec.refs[i].span
	plain, ok := rr.plain[s.chunk]
	if !ok {
		var err error
		if plain, err = expandChunk(rr.rec.chunks[s.chunk]); err != nil {
			return nil, err
		}
		rr.plain[s.chunk] = plain
	}
	if int(s.off+s.n) > len(plain) {
		return nil, fmt.Errorf("recorded object %s out of its chunk", rr.rec.ref(i).ID())
	}
	return plain[s.off : s.off+s.n], nil
}

// object returns the i-th object.
func (rr *recordReader) object(i int) (*unstructured.Unstructured, error) {
	raw, err := rr.raw(i)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return obj, nil
}

// compressChunk compresses a chunk with S2 (klauspost/compress, an extension of Snappy):
// it needs no writer kept between calls (it pools only hash tables of 1 to 64 KB, one per
// concurrent encode), where a DEFLATE writer holds 1.2 MB of tables (pooled, one per
// concurrent record: several MB live while Applications sync, which the collector's heap
// goal doubles), for chunks about a quarter larger (16 ConfigMaps: 3,654 bytes to 327,
// DEFLATE's fastest level 258) in about a quarter of the time of a warm pooled writer.
// The encoder writes into a buffer of the largest size it may need; the chunk kept is
// a copy of what it used.
func compressChunk(plain []byte) []byte { return bytes.Clone(s2.Encode(nil, plain)) }

func expandChunk(z []byte) ([]byte, error) { return s2.Decode(nil, z) }

// compareID orders references as their inventory IDs identify them (the version aside).
func compareID(a, b drift.ObjectRef) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.GVK.Group, b.GVK.Group), strings.Compare(a.GVK.Kind, b.GVK.Kind))
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
