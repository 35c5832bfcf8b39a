package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"go.yaml.in/yaml/v3"
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
	if errors.Is(err, sops.MetadataNotFound) {
		return data, nil
	}
	return plain, err
}

// decryptAs decrypts data in format in and emits the plain document in format out,
// checking the MAC in full.
func (d *Decryptor) decryptAs(what string, data []byte, in, out formats.Format) ([]byte, error) {
	tree, err := d.decrypt(what, data, in, macFull)
	if err != nil {
		return nil, err
	}
	return emit(what, out, tree.Branches)
}

// emit writes branches as a plain file in format.
func emit(what string, format formats.Format, branches sops.TreeBranches) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decrypting %s: cannot write the plain document as %s", what, formatName(format))
		}
	}()
	store := newStore(format)
	out, err = store.EmitPlainFile(branches)
	if err != nil {
		return nil, fmt.Errorf("decrypting %s: cannot write the plain document as %s", what, formatName(format))
	}
	return out, nil
}

// formatsOf returns the SOPS format that data, the content of the file name, was
// encrypted in and the format to write its plain content in; ok is false when data
// holds no SOPS document.
func formatsOf(name string, data []byte) (in, out formats.Format, ok bool) {
	if !bytes.Contains(data, encMarker) {
		return 0, 0, false
	}
	in, ok = markerFormat(data)
	if !ok {
		return 0, 0, false
	}
	ext := formats.FormatForPath(name)
	switch {
	case ext == in:
		return in, in, true
	case ext == formats.Binary && in == formats.Json:
		// A binary file is stored as a JSON envelope around its one value.
		return formats.Json, formats.Binary, true
	default:
		return in, in, true
	}
}

// markerFormat tells the SOPS format of data by the shape of its MAC entry.
func markerFormat(data []byte) (formats.Format, bool) {
	switch {
	case bytes.Contains(data, []byte("sops_mac=ENC[")):
		return formats.Dotenv, true
	case jsonMAC.Match(data):
		return formats.Json, true
	case bytes.Contains(data, []byte("mac: ENC[")):
		return formats.Yaml, true
	case bytes.Contains(data, []byte("[sops]")):
		return formats.Ini, true
	}
	return 0, false
}

// newStore returns SOPS' store for format, with SOPS' defaults.
func newStore(format formats.Format) store {
	switch format {
	case formats.Yaml:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case formats.Json:
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case formats.Dotenv:
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	case formats.Ini:
		return ini.NewStore(&config.INIStoreConfig{})
	default:
		return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
}

// store is the part of SOPS' stores that decryption uses.
type store interface {
	sops.EncryptedFileLoader
	sops.PlainFileEmitter
}

func formatName(f formats.Format) string {
	switch f {
	case formats.Yaml:
		return "YAML"
	case formats.Json:
		return "JSON"
	case formats.Dotenv:
		return "dotenv"
	case formats.Ini:
		return "INI"
	default:
		return "binary"
	}
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
		tree, err := d.decrypt(what, bytes.Join(parts, []byte("---\n")), formats.Yaml, macFull)
		if err != nil {
			return nil, err
		}
		if len(tree.Branches) != len(idx) {
			return nil, fmt.Errorf("decrypting %s: found %d documents, expected %d", what, len(tree.Branches), len(idx))
		}
		for j, i := range idx {
			plain, err := emit(what, formats.Yaml, sops.TreeBranches{tree.Branches[j]})
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
// a "sops" mapping holding a "mac".
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
	if top.SOPS == nil || top.SOPS.MAC == "" {
		return "", false, nil
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
