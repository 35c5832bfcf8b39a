package imageupdate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// SetterKey is the key of Flux's setter marker: `# {"$imagepolicy": "NS:NAME[:tag|:name|:digest]"}`.
const SetterKey = "$imagepolicy"

// maxMarkerLength bounds a comment read as a marker.
const maxMarkerLength = 512

// Fields a marker may name after NS:NAME; none is the whole image reference.
const (
	FieldTag    = "tag"
	FieldName   = "name"
	FieldDigest = "digest"
)

// safeValue is what a written value may hold: the characters of image names, tags and
// digests, so a value can never change the YAML around it.
var safeValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)

// Change is one rewritten field.
type Change struct {
	// File is the file's slash-separated path in the repository.
	File string
	// Object is the Kubernetes object holding the field (kind/namespace/name; "" when
	// the document is not one).
	Object ObjectRef
	// Setter is the marker's value, e.g. "flux-system:podinfo:tag".
	Setter string
	// OldValue and NewValue are the field's values.
	OldValue, NewValue string
}

// ObjectRef names the document a change is in.
type ObjectRef struct {
	Kind, Namespace, Name string
}

func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Values are the policies' images by "NS:NAME".
type Values map[string]gitsyncv1.ImageRef

// valueFor is the text a marker (NS:NAME or NS:NAME:field) sets, and whether the marker
// names a policy of values.
func (v Values) valueFor(marker string) (string, bool) {
	parts := strings.Split(marker, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "", false
	}
	ref, ok := v[parts[0]+":"+parts[1]]
	if !ok {
		return "", false
	}
	if len(parts) == 2 {
		return fullRef(ref), true
	}
	switch parts[2] {
	case FieldTag:
		return ref.Tag, true
	case FieldName:
		return ref.Name, true
	case FieldDigest:
		return ref.Digest, ref.Digest != ""
	}
	return "", false
}

func fullRef(r gitsyncv1.ImageRef) string { return r.String() }

// markerOf returns the marker in a line comment, if it is one.
func markerOf(comment string) (string, bool) {
	c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if len(c) > maxMarkerLength || !strings.HasPrefix(c, "{") || !strings.Contains(c, SetterKey) {
		return "", false
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(c), &m); err != nil {
		return "", false
	}
	v, ok := m[SetterKey]
	return v, ok && v != ""
}

// edit replaces the scalar at (line, col) (1-based; col in characters) spanning n bytes.
type edit struct {
	line, col, n int
	text         string
}

// ErrUnsupportedField: a marked field is not a one-line scalar (a block scalar, an
// alias); it is left alone and reported.
var ErrUnsupportedField = errors.New("a marked field is not a one-line scalar")

// Rewrite sets the fields of content (a YAML stream) whose line comment is a marker of a
// policy in values, and returns the new content and the changes. It parses with kyaml
// (the YAML library kustomize's setters use) only to find the fields and their
// positions; the bytes are then changed in place, so that everything but the values —
// comments, indentation, quoting, key order, document separators — stays byte for byte.
func Rewrite(file string, content []byte, values Values) ([]byte, []Change, error) {
	if !bytes.Contains(content, []byte(SetterKey)) {
		return content, nil, nil
	}
	// A tenant's file: bounded in bytes, values (aliases expanded) and depth before it is parsed.
	if err := yamlbudget.Check(file, content); err != nil {
		return nil, nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var edits []edit
	var changes []Change
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		obj := objectOf(&doc)
		var walkErr error
		walk(&doc, func(key, val *yaml.Node) {
			marker, ok := markerOf(val.LineComment)
			if !ok && key != nil {
				marker, ok = markerOf(key.LineComment)
			}
			if !ok {
				return
			}
			text, ok := values.valueFor(marker)
			if !ok || text == val.Value {
				return
			}
			if val.Kind != yaml.ScalarNode || (val.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0 {
				walkErr = fmt.Errorf("%s line %d: %w", file, val.Line, ErrUnsupportedField)
				return
			}
			if !safeValue.MatchString(text) {
				walkErr = fmt.Errorf("%s line %d: the value of %s has characters an image reference cannot have", file, val.Line, marker)
				return
			}
			e, err := scalarEdit(content, val, text)
			if err != nil {
				walkErr = fmt.Errorf("%s line %d: %w", file, val.Line, err)
				return
			}
			edits = append(edits, e)
			changes = append(changes, Change{File: file, Object: obj, Setter: marker, OldValue: val.Value, NewValue: text})
		})
		if walkErr != nil {
			return nil, nil, walkErr
		}
	}
	if len(edits) == 0 {
		return content, nil, nil
	}
	out, err := apply(content, edits)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, changes, nil
}

// walk calls f for every mapping value (with its key) and sequence item (key nil).
func walk(n *yaml.Node, f func(key, val *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.ScalarNode {
				f(k, v)
			} else {
				walk(v, f)
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				f(nil, c)
			} else {
				walk(c, f)
			}
		}
	}
}

// objectOf names a document's Kubernetes object.
func objectOf(doc *yaml.Node) ObjectRef {
	rn := yaml.NewRNode(doc)
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		rn = yaml.NewRNode(doc.Content[0])
	}
	if rn.YNode().Kind != yaml.MappingNode {
		return ObjectRef{}
	}
	return ObjectRef{Kind: rn.GetKind(), Namespace: rn.GetNamespace(), Name: rn.GetName()}
}

// scalarEdit locates val's source text: plain scalars are their value, quoted ones run
// to the closing quote on the same line.
func scalarEdit(content []byte, val *yaml.Node, text string) (edit, error) {
	line, err := lineAt(content, val.Line)
	if err != nil {
		return edit{}, err
	}
	start, err := byteColumn(line, val.Column)
	if err != nil {
		return edit{}, err
	}
	rest := line[start:]
	e := edit{line: val.Line, col: start, text: text}
	switch {
	case val.Style&yaml.DoubleQuotedStyle != 0, val.Style&yaml.SingleQuotedStyle != 0:
		q := rest[0]
		end := bytes.IndexByte(rest[1:], q)
		if end < 0 || string(rest[1:1+end]) != val.Value {
			return edit{}, ErrUnsupportedField
		}
		e.col, e.n = start+1, end
	default:
		if !bytes.HasPrefix(rest, []byte(val.Value)) {
			return edit{}, ErrUnsupportedField
		}
		e.n = len(val.Value)
	}
	return e, nil
}

// lineAt is the n-th (1-based) line of content, without its newline.
func lineAt(content []byte, n int) ([]byte, error) {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(content, '\n')
		if j < 0 {
			return nil, ErrUnsupportedField
		}
		content = content[j+1:]
	}
	if j := bytes.IndexByte(content, '\n'); j >= 0 {
		content = content[:j]
	}
	return content, nil
}

// byteColumn turns a 1-based character column into a byte offset in line.
func byteColumn(line []byte, col int) (int, error) {
	off := 0
	for i := 1; i < col; i++ {
		if off >= len(line) {
			return 0, ErrUnsupportedField
		}
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	if off >= len(line) {
		return 0, ErrUnsupportedField
	}
	return off, nil
}

// apply makes edits (at most one per position, in document order) to content.
func apply(content []byte, edits []edit) ([]byte, error) {
	lineStarts := []int{0}
	for i, b := range content {
		if b == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	var out bytes.Buffer
	prev := 0
	for _, e := range edits {
		at := lineStarts[e.line-1] + e.col
		if at < prev {
			return nil, ErrUnsupportedField
		}
		out.Write(content[prev:at])
		out.WriteString(e.text)
		prev = at + e.n
	}
	out.Write(content[prev:])
	return out.Bytes(), nil
}
