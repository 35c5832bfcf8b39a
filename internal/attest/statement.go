package attest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// PredicateType names gitsync's sync predicate (in-toto's predicateType).
const PredicateType = "https://gitsync.dev/attestation/sync/v1"

// PayloadType is the DSSE payload type of an in-toto statement.
const PayloadType = "application/vnd.in-toto+json"

// Predicate is what a sync attestation says about the sync.
type Predicate struct {
	// Application is the Application that synced.
	Application Ref `json:"application"`
	// Source is where the revision came from (absent with Sources); Revision the
	// revision synced; Signer the verified signer of the revision, when the source
	// verified one (with Sources, every source's signer, joined by ", ").
	Source   SourceRef `json:"source,omitzero"`
	Revision string    `json:"revision"`
	Signer   string    `json:"signer,omitempty"`
	// Sources are the sources of an Application of spec.sources, in its order, each
	// with its own revision and verified signer; Revision joins their revisions.
	Sources []Source `json:"sources,omitempty"`
	// Chart names the chart, when a chart rendered.
	Chart *Chart `json:"chart,omitempty"`
	// SyncedAt is when the sync finished.
	SyncedAt time.Time `json:"syncedAt"`
	// Objects are the applied objects with the digest of each field gitsync applied, so
	// that a verification can name the fields that changed since. FieldsWithheld says
	// they were left out to keep the record within its size bound (the subjects' object
	// digests still cover every field).
	Objects        []Object `json:"objects,omitempty"`
	FieldsWithheld bool     `json:"fieldsWithheld,omitempty"`
}

// Ref names a namespaced object.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// SourceRef names the Application's source.
type SourceRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Source is one source of an Application of spec.sources as a sync rendered it: which
// source, its path, the revision of it that was synced and its verified signer, if any.
type Source struct {
	SourceRef
	Path     string `json:"path,omitempty"`
	Revision string `json:"revision"`
	Signer   string `json:"signer,omitempty"`
}

// Chart names a rendered chart; ValuesDigest is the sha256 of the Application's values
// specification (spec.helm's values, valuesFiles and valuesFrom references).
type Chart struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	ValuesDigest string `json:"valuesDigest,omitempty"`
}

// Object is one applied object: its identity and the fields gitsync applied.
type Object struct {
	Group     string  `json:"group,omitempty"`
	Version   string  `json:"version"`
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Fields    []Field `json:"fields"`
}

// Field is one applied field: its path (serialized managedFields path elements) and the
// digest of its value (see valueDigest).
type Field struct {
	Path   []string `json:"p"`
	Digest string   `json:"d"`
}

// ID is the object's identity as a subject names it: group/version/kind/namespace/name
// (the core group and a cluster-scoped object's namespace are empty).
func (o Object) ID() string {
	return strings.Join([]string{o.Group, o.Version, o.Kind, o.Namespace, o.Name}, "/")
}

// Digest is the sha256 over the object's identity and its fields (sorted by path), as
// its subject carries it.
func (o Object) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", o.ID())
	fields := slices.Clone(o.Fields)
	slices.SortFunc(fields, func(a, b Field) int { return strings.Compare(pathKey(a.Path), pathKey(b.Path)) })
	for _, f := range fields {
		fmt.Fprintf(h, "%s\t%s\n", pathKey(f.Path), f.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pathKey joins serialized path elements with a byte none of them holds.
func pathKey(p []string) string { return strings.Join(p, "\x00") }

// Statement makes the in-toto statement of a sync: one subject per object (its ID and
// Digest) and p as the predicate. Objects are sorted by ID.
func Statement(p Predicate) ([]byte, error) { return statement(p, false) }

// statementWithheld is Statement with the objects' fields left out of the predicate
// (the subjects' digests still cover them).
func statementWithheld(p Predicate) ([]byte, error) { return statement(p, true) }

func statement(p Predicate, withhold bool) ([]byte, error) {
	p.Objects = slices.Clone(p.Objects)
	slices.SortFunc(p.Objects, func(a, b Object) int { return strings.Compare(a.ID(), b.ID()) })
	subjects := make([]*intoto.ResourceDescriptor, 0, len(p.Objects))
	for _, o := range p.Objects {
		subjects = append(subjects, &intoto.ResourceDescriptor{Name: o.ID(), Digest: map[string]string{"sha256": o.Digest()}})
	}
	if len(subjects) == 0 {
		// in-toto requires a subject: an empty applied set is attested as such.
		subjects = append(subjects, &intoto.ResourceDescriptor{Name: "empty", Digest: map[string]string{"sha256": emptyDigest}})
	}
	if withhold {
		p.FieldsWithheld = true
		for i := range p.Objects {
			p.Objects[i].Fields = nil
		}
	}
	predicate, err := predicateStruct(p)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subjects, PredicateType: PredicateType, Predicate: predicate}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("making the statement: %w", err)
	}
	return protojson.Marshal(st)
}

// emptyDigest is the sha256 of nothing.
var emptyDigest = func() string { s := sha256.Sum256(nil); return hex.EncodeToString(s[:]) }()

// predicateStruct turns p into the protobuf Struct the statement carries.
func predicateStruct(p Predicate) (*structpb.Struct, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the predicate: %w", err)
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("encoding the predicate: %w", err)
	}
	return s, nil
}

// Parsed is a verified statement: its subjects by name and its predicate.
type Parsed struct {
	Subjects  map[string]string
	Predicate Predicate
}

// ParseStatement reads a statement of PredicateType and checks that the subjects and
// the predicate's objects agree: each object's Digest is its subject's.
func ParseStatement(b []byte) (*Parsed, error) {
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("decoding the statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("decoding the statement: %w", err)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("predicate type is %q, not %q", st.GetPredicateType(), PredicateType)
	}
	pb, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, fmt.Errorf("decoding the predicate: %w", err)
	}
	out := &Parsed{Subjects: map[string]string{}}
	if err := json.Unmarshal(pb, &out.Predicate); err != nil {
		return nil, fmt.Errorf("decoding the predicate: %w", err)
	}
	for _, s := range st.GetSubject() {
		out.Subjects[s.GetName()] = s.GetDigest()["sha256"]
	}
	if out.Predicate.FieldsWithheld {
		return out, nil
	}
	for _, o := range out.Predicate.Objects {
		if out.Subjects[o.ID()] != o.Digest() {
			return nil, fmt.Errorf("the fields recorded for %s do not match its subject digest", o.ID())
		}
	}
	if len(out.Predicate.Objects) != len(out.Subjects) && !(len(out.Predicate.Objects) == 0 && out.Subjects["empty"] == emptyDigest) {
		return nil, fmt.Errorf("the statement has %d subjects and %d objects", len(out.Subjects), len(out.Predicate.Objects))
	}
	return out, nil
}
