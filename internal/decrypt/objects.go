package decrypt

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// IsEncrypted tells whether obj is a SOPS document: it has a top-level "sops" mapping,
// as SOPS writes its metadata.
func IsEncrypted(obj *unstructured.Unstructured) bool {
	_, ok := obj.Object["sops"].(map[string]any)
	return ok
}

// Objects decrypts objs in place: a v1 Secret that is not a SOPS document has each
// data (base64) and stringData entry that holds a whole SOPS-encrypted file — a
// kustomize secretGenerator over an encrypted env or file source — replaced by the
// file's plain content, in the format the entry's name says (as File does), its MAC
// checked in full.
//
// An object that IsEncrypted (a SOPS document of any kind) is refused: a decoded object
// has lost the order of its keys, so its MAC cannot be checked over every value as
// SOPS checks it, and then its unencrypted values (kind, namespace, metadata) could be
// changed by anyone. SOPS documents are decrypted from their files' bytes (File,
// Manifests); one that reaches Objects is one whose file was not read as SOPS — most
// often for a missing MAC, which is said.
//
// origin(i), when origin is not nil, names the file objs[i] came from, for errors. The
// first failure is returned and objs may then be partly decrypted: the caller must not
// use them.
func (d *Decryptor) Objects(objs []*unstructured.Unstructured, origin func(i int) string) error {
	for i, obj := range objs {
		what := utils.FmtUnstructured(obj)
		if origin != nil {
			if o := origin(i); o != "" {
				what = o + ": " + what
			}
		}
		switch {
		case IsEncrypted(obj):
			return refuseObject(what, obj)
		case obj.GetKind() == "Secret" && obj.GetAPIVersion() == "v1":
			if err := d.secretEntries(what, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuseObject is the error for a SOPS document held as an object.
func refuseObject(what string, obj *unstructured.Unstructured) error {
	if mac, _ := obj.Object["sops"].(map[string]any)["mac"].(string); mac == "" {
		return noMAC(what)
	}
	return fmt.Errorf("decrypting %s: a SOPS document is only decrypted from its file, where its MAC is checked "+
		"over every value in order, and its file was not read as SOPS (an unusual file name or MAC entry?)", what)
}

// secretEntries decrypts the data and stringData entries of a Secret that hold a whole
// SOPS-encrypted file.
func (d *Decryptor) secretEntries(what string, obj *unstructured.Unstructured) error {
	for _, field := range []string{"data", "stringData"} {
		entries, ok := obj.Object[field].(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := entries[k].(string)
			if !ok {
				continue
			}
			raw := []byte(s)
			if field == "data" {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					continue // not base64: the API server refuses it, not this step
				}
				raw = b
			}
			in, out, ok := formatsOf(k, raw)
			if !ok {
				continue
			}
			plain, err := d.decryptAs(fmt.Sprintf("%s %s[%q]", what, field, k), raw, in, out)
			if errors.Is(err, sopsfile.ErrNoMetadata) {
				continue // SOPS-like text, but no SOPS file: kept as it is
			}
			if err != nil {
				return err
			}
			if field == "data" {
				entries[k] = base64.StdEncoding.EncodeToString(plain)
			} else {
				entries[k] = string(plain)
			}
		}
	}
	return nil
}
