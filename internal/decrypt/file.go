package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// encMarker is in every SOPS-encrypted file: at least its MAC is encrypted.
var encMarker = []byte("ENC[AES256_GCM,")

// jsonMAC finds the MAC of SOPS JSON metadata (and of the JSON envelope of a binary file).
var jsonMAC = regexp.MustCompile(`"mac"\s*:\s*"ENC\[`)

// File decrypts data, the content of the file name (a path, used for its extension and
// in errors), when it is SOPS-encrypted, and returns data itself when it is not. The
// format is SOPS' own choice by extension — .yaml/.yml, .json, .env, .ini, anything
// else binary — unless the content is plainly another SOPS format (a YAML document
// named secret.enc), which then wins. The plain file has the format the SOPS CLI would
// write: the original bytes for a binary file. The MAC is checked in full.
func (d *Decryptor) File(name string, data []byte) ([]byte, error) {
	in, out, ok := formatsOf(name, data)
	if !ok {
		return data, nil
	}
	plain, err := d.decryptAs(name, data, in, out)
	if errors.Is(err, sopsfile.ErrNoMetadata) {
		return data, nil
	}
	return plain, err
}

// decryptAs decrypts data in format in and emits the plain document in format out,
// checking the MAC in full.
func (d *Decryptor) decryptAs(what string, data []byte, in, out sopsfile.Format) ([]byte, error) {
	file, err := d.decrypt(what, data, in)
	if err != nil {
		return nil, err
	}
	return emit(what, out, file.Branches)
}

// emit writes branches as a plain file in format.
func emit(what string, format sopsfile.Format, branches []sopsfile.Branch) (out []byte, err error) {
	defer func() {
		// Not expected; but a panic's value may hold a value of the document.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("decrypting %s: cannot write the plain document as %s", what, format)
		}
	}()
	out, err = sopsfile.Emit(branches, format)
	if err != nil {
		return nil, fmt.Errorf("decrypting %s: cannot write the plain document as %s", what, format)
	}
	return out, nil
}

// formatsOf returns the SOPS format that data, the content of the file name, was
// encrypted in and the format to write its plain content in; ok is false when data
// holds no SOPS document.
func formatsOf(name string, data []byte) (in, out sopsfile.Format, ok bool) {
	if !bytes.Contains(data, encMarker) {
		return 0, 0, false
	}
	ext := sopsfile.FormatForPath(name)
	in, ok = markerFormat(data)
	if !ok {
		// No MAC where SOPS writes it: SOPS metadata in the format the name says (a
		// binary file's JSON envelope) is still SOPS, for decrypt to refuse or read.
		in = ext
		if in == sopsfile.Binary {
			in = sopsfile.JSON
		}
		if _, err := sopsfile.Load(data, in); err != nil {
			return 0, 0, false
		}
	}
	switch {
	case ext == in:
		return in, in, true
	case ext == sopsfile.Binary && in == sopsfile.JSON:
		// A binary file is stored as a JSON envelope around its one value.
		return sopsfile.JSON, sopsfile.Binary, true
	default:
		return in, in, true
	}
}

// markerFormat tells the SOPS format of data by the shape of its MAC entry.
func markerFormat(data []byte) (sopsfile.Format, bool) {
	switch {
	case bytes.Contains(data, []byte("sops_mac=ENC[")):
		return sopsfile.Dotenv, true
	case jsonMAC.Match(data):
		return sopsfile.JSON, true
	case bytes.Contains(data, []byte("mac: ENC[")):
		return sopsfile.YAML, true
	case bytes.Contains(data, []byte("[sops]")):
		return sopsfile.INI, true
	}
	return 0, false
}

// Manifests decrypts the SOPS-encrypted documents of data, a stream of YAML documents
// separated by "---" lines (a manifest file, a chart's rendered template), and returns
// the stream with each of them replaced by its plain YAML; the other documents keep
// their bytes. name is used in errors. Documents that share one MAC were encrypted as
// one multi-document file and are decrypted together; each document otherwise alone.
// The MAC is checked in full.
func (d *Decryptor) Manifests(name string, data []byte) ([]byte, error) {
	if !bytes.Contains(data, encMarker) {
		return data, nil
	}
	if err := yamlbudget.Check(name, data); err != nil {
		return nil, fmt.Errorf("decrypting %w", err)
	}
	docs := splitDocuments(data)
	groups := map[string][]int{}
	var order []string
	for i, doc := range docs {
		mac, ok, err := sopsMAC(doc.body)
		if err != nil {
			return nil, fmt.Errorf("decrypting %s: document %d: %w", name, i+1, err)
		}
		if !ok {
			continue
		}
		if _, seen := groups[mac]; !seen {
			order = append(order, mac)
		}
		groups[mac] = append(groups[mac], i)
	}
	if len(order) == 0 {
		return data, nil
	}
	for _, mac := range order {
		idx := groups[mac]
		parts := make([][]byte, len(idx))
		for j, i := range idx {
			parts[j] = docs[i].body
		}
		what := fmt.Sprintf("%s (document %d)", name, idx[0]+1)
		if len(idx) > 1 {
			what = fmt.Sprintf("%s (documents %s)", name, docNumbers(idx))
		}
		file, err := d.decrypt(what, bytes.Join(parts, []byte("---\n")), sopsfile.YAML)
		if err != nil {
			return nil, err
		}
		if len(file.Branches) != len(idx) {
			return nil, fmt.Errorf("decrypting %s: found %d documents, expected %d", what, len(file.Branches), len(idx))
		}
		for j, i := range idx {
			plain, err := emit(what, sopsfile.YAML, file.Branches[j:j+1])
			if err != nil {
				return nil, err
			}
			docs[i].body = plain
		}
	}
	var out bytes.Buffer
	for _, doc := range docs {
		out.Write(doc.sep)
		out.Write(doc.body)
	}
	return out.Bytes(), nil
}

// document is one document of a YAML stream: the separator line before it (empty for
// the first) and its bytes.
type document struct {
	sep, body []byte
}

// splitDocuments cuts a YAML stream at its "---" lines (a line that is "---", or
// "---" followed by a space, tab or comment).
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{}
	start := 0
	for start < len(data) {
		end := bytes.IndexByte(data[start:], '\n')
		var line []byte
		if end < 0 {
			line = data[start:]
			end = len(data)
		} else {
			end += start + 1
			line = data[start:end]
		}
		if isSeparator(line) {
			docs = append(docs, cur)
			cur = document{sep: line}
		} else {
			cur.body = append(cur.body, line...)
		}
		start = end
	}
	return append(docs, cur)
}

func isSeparator(line []byte) bool {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "---") {
		return false
	}
	rest := s[3:]
	return strings.TrimSpace(rest) == "" || strings.HasPrefix(strings.TrimLeft(rest, " \t"), "#")
}

// sopsMAC returns the encrypted MAC of doc when it is a SOPS document: a mapping with
// a "sops" mapping holding a "mac". A "sops" mapping without a MAC is an error.
func sopsMAC(doc []byte) (string, bool, error) {
	if !bytes.Contains(doc, encMarker) {
		return "", false, nil
	}
	var top struct {
		SOPS *struct {
			MAC string `yaml:"mac"`
		} `yaml:"sops"`
	}
	if err := yaml.Unmarshal(doc, &top); err != nil {
		// The document is not a mapping (or not YAML); it cannot be a SOPS document.
		// yaml's message may quote the document, so it is not kept.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return "", false, nil
		}
		return "", false, errors.New("not valid YAML")
	}
	if top.SOPS == nil {
		return "", false, nil
	}
	if top.SOPS.MAC == "" {
		return "", false, fmt.Errorf("%w: SOPS writes one over every value, so a document without it "+
			"is refused (tampered document: nothing binds its unencrypted values to its keys)", sopsfile.ErrNoMAC)
	}
	return top.SOPS.MAC, true, nil
}

func docNumbers(idx []int) string {
	s := make([]string, len(idx))
	for j, i := range idx {
		s[j] = fmt.Sprint(i + 1)
	}
	return strings.Join(s, ", ")
}
