package decrypt

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// IsEncrypted tells whether obj is a SOPS document: it has a top-level "sops" mapping,
// as SOPS writes its metadata.
func IsEncrypted(obj *unstructured.Unstructured) bool {
	_, ok := obj.Object["sops"].(map[string]any)
	return ok
}

// Objects decrypts objs in place:
//   - an object that IsEncrypted (a Secret or any other kind) is replaced by its plain
//     form, without the "sops" metadata;
//   - a v1 Secret that is not a SOPS document has each data (base64) and stringData
//     entry that holds a whole SOPS-encrypted file — a kustomize secretGenerator over
//     an encrypted env or file source — replaced by the file's plain content, in the
//     format the entry's name says (as File does).
//
// The MAC of a SOPS object is checked for authenticity only (see the package doc);
// that of an encrypted entry in full. origin(i), when origin is not nil, names the file
// objs[i] came from, for errors. The first failure is returned and objs may then be
// partly decrypted: the caller must not use them.
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
			if err := d.object(what, obj); err != nil {
				return err
			}
		case obj.GetKind() == "Secret" && obj.GetAPIVersion() == "v1":
			if err := d.secretEntries(what, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// object decrypts a SOPS document held as an object, read as SOPS JSON.
func (d *Decryptor) object(what string, obj *unstructured.Unstructured) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("decrypting %s: encoding as JSON: %w", what, err)
	}
	file, err := d.decrypt(what, data, sopsfile.JSON, macAuthentic)
	if err != nil {
		return err
	}
	plain, err := emit(what, sopsfile.JSON, file.Branches)
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(plain, &m); err != nil {
		return fmt.Errorf("decrypting %s: the plain document is not a JSON object", what)
	}
	delete(m, "sops")
	obj.Object = m
	return nil
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
