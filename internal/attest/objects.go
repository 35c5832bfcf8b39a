package attest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// Field digests. A field's digest is the first 128 bits of the sha256 of its value as
// JSON (map keys sorted), written "sha256:<32 hex>"; a field the object does not hold is
// "absent". A Secret's data and stringData are recorded as "present" only: an unkeyed
// hash of a short Secret value could be matched against guesses by anyone who can read
// the record, so a Secret's values are not attested (its other fields are).
const (
	absentDigest  = "absent"
	presentDigest = "present"
)

// Record returns the attested form of an applied object as the API server holds it
// after the apply (with managedFields): its identity and a digest of each field that
// gitsync applied (drift.AppliedFields).
func Record(obj *unstructured.Unstructured) (Object, error) {
	gvk := obj.GroupVersionKind()
	o := Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !appliedByGitsync(obj) {
		// In the inventory without being applied (a chart's CRD under crds: Skip or an
		// existing one under Create): attested by identity only.
		o.Fields = []Field{}
		return o, nil
	}
	fields, err := drift.AppliedFields(obj)
	if err != nil {
		return Object{}, fmt.Errorf("recording %s: %w", o.ID(), err)
	}
	o.Fields = make([]Field, 0, len(fields))
	for _, f := range fields {
		o.Fields = append(o.Fields, Field{Path: f.Elements, Digest: fieldDigest(obj, f)})
	}
	return o, nil
}

// appliedByGitsync tells whether obj has gitsync's Apply entry in managedFields.
func appliedByGitsync(obj *unstructured.Unstructured) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == gitsyncv1.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return true
		}
	}
	return false
}

// fieldDigest is the digest of f's value in obj (see the const block above).
func fieldDigest(obj *unstructured.Unstructured, f drift.AppliedField) string {
	if !f.Found {
		return absentDigest
	}
	if secretValue(obj, f.Path) {
		return presentDigest
	}
	b, err := json.Marshal(f.Value)
	if err != nil {
		b = []byte("unencodable")
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// secretValue tells whether path is under a core Secret's data or stringData.
func secretValue(obj *unstructured.Unstructured, path string) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret" && (strings.HasPrefix(path, "/data/") || strings.HasPrefix(path, "/stringData/"))
}

// Drifted is an attested object that no longer holds what was attested: its fields that
// changed, or Missing when it is gone.
type Drifted struct {
	Object  string
	Missing bool
	Fields  []DriftedField
	// Unnamed is set when the record withheld the fields (size bound): the object
	// changed, and which fields cannot be told.
	Unnamed bool
}

// DriftedField is a field that changed since the attestation and who wrote it: the
// field managers other than gitsync that own it now (none known: a removal, or a write
// that left no owner).
type DriftedField struct {
	Path     string
	Managers []string
}

// Compare checks a live object (nil: not found) against its attested record and
// returns what drifted (nil when it holds what was attested). subject is the object's
// attested digest; withheld says the record carries no fields.
func Compare(rec Object, subject string, live *unstructured.Unstructured, withheld bool) (*Drifted, error) {
	if live == nil {
		return &Drifted{Object: rec.ID(), Missing: true}, nil
	}
	if withheld {
		now, err := Record(live)
		if err != nil {
			return nil, err
		}
		if now.Digest() == subject {
			return nil, nil
		}
		return &Drifted{Object: rec.ID(), Unnamed: true}, nil
	}
	var out *Drifted
	for _, f := range rec.Fields {
		at, managers, err := drift.FieldAt(live, f.Path)
		if err != nil {
			return nil, fmt.Errorf("checking %s: %w", rec.ID(), err)
		}
		if fieldDigest(live, at) == f.Digest {
			continue
		}
		if out == nil {
			out = &Drifted{Object: rec.ID()}
		}
		out.Fields = append(out.Fields, DriftedField{Path: at.Path, Managers: managers})
	}
	return out, nil
}
