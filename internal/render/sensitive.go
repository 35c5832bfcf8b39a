package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// minSensitive is the shortest value a render reports as sensitive: masking shorter
// strings wherever they appear would garble every output ("demo" in "gitsync-demo",
// "true", "5432") and hide little.
const minSensitive = 6

// learn records the plain values of a file that decrypted to plain: in YAML or JSON,
// those whose ciphertext was an ENC[…] value (the unencrypted ones stay visible), except
// in Secrets, whose data every output masks whole; in a dotenv or INI file the value of
// every key=value line; otherwise every line.
func (d *decryption) learn(rel string, encrypted, plain []byte) {
	var values []string
	switch strings.ToLower(path.Ext(rel)) {
	case ".yaml", ".yml", ".json":
		encDocs, err1 := documents(encrypted)
		plainDocs, err2 := documents(plain)
		if err1 == nil && err2 == nil && len(encDocs) == len(plainDocs) {
			for i := range encDocs {
				if !isSecretDoc(plainDocs[i]) {
					values = append(values, decryptedLeaves(encDocs[i], plainDocs[i])...)
				}
			}
			break
		}
		values = lines(plain, false)
	case ".env", ".ini":
		values = lines(plain, true)
	default:
		values = lines(plain, false)
	}
	d.add(values...)
}

// learnObject records the plain values of an object decrypted in place (not of a
// Secret: see learn).
func (d *decryption) learnObject(before, after map[string]any) {
	if !isSecretDoc(after) {
		d.add(decryptedLeaves(before, after)...)
	}
}

// isSecretDoc tells whether a decoded document is a v1 Secret.
func isSecretDoc(doc any) bool {
	m, ok := doc.(map[string]any)
	return ok && m["apiVersion"] == "v1" && m["kind"] == "Secret"
}

func (d *decryption) add(values ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range values {
		if len(v) >= minSensitive {
			d.sensitive[v] = true
		}
	}
}

// decryptedLeaves walks enc and plain together and returns the plain counterpart of
// every ENC[…] string of enc, as text.
func decryptedLeaves(enc, plain any) []string {
	var out []string
	switch e := enc.(type) {
	case map[string]any:
		p, _ := plain.(map[string]any)
		for k, v := range e {
			if k == "sops" {
				continue
			}
			out = append(out, decryptedLeaves(v, p[k])...)
		}
	case []any:
		p, _ := plain.([]any)
		for i, v := range e {
			if i < len(p) {
				out = append(out, decryptedLeaves(v, p[i])...)
			}
		}
	case string:
		if strings.HasPrefix(e, string(sopsMarker)) && plain != nil {
			out = append(out, strings.TrimSpace(fmt.Sprint(plain)))
		}
	}
	return out
}

// documents decodes a YAML (or JSON) stream.
func documents(data []byte) ([]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if doc != nil {
			out = append(out, doc)
		}
	}
}

// lines returns the non-empty, non-comment lines of data, or with keyValue the value
// of each key=value line.
func lines(data []byte, keyValue bool) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
			continue
		}
		if keyValue {
			_, v, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			l = strings.Trim(strings.TrimSpace(v), `"'`)
		}
		out = append(out, l)
	}
	return out
}
