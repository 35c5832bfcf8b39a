package sopsfile

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// loadYAML reads a stream of YAML documents (each a mapping) into branches, comments
// included where SOPS puts them: a key's head and line comments before it, a scalar
// value's head and line comments before its key too, foot comments after.
//
// The stream is first held to the YAML budget (every document: the conversion below
// copies what aliases name).
func loadYAML(data []byte) ([]Branch, error) {
	if err := yamlbudget.Check("the SOPS file", data); err != nil {
		return nil, err
	}
	if len(data) > 0 {
		// Decoding into a map makes yaml refuse duplicate keys, as SOPS does.
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(map[string]any{}); err != nil && !errors.Is(err, io.EOF) {
			return nil, errors.New("not valid YAML")
		}
	}
	var out []Branch
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, errors.New("not valid YAML")
		}
		b, err := yamlMapping(&doc, Branch{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

// yamlComments appends the lines of a node's comment to b as comment items.
func yamlComments(b Branch, comment string, inline bool) Branch {
	for _, line := range strings.Split(comment, "\n") {
		if line != "" {
			b = append(b, Item{Key: Comment{Value: line[1:], Inline: inline}})
		}
	}
	return b
}

func yamlListComments(l []any, comment string, inline bool) []any {
	for _, line := range strings.Split(comment, "\n") {
		if line != "" {
			l = append(l, Comment{Value: line[1:], Inline: inline})
		}
	}
	return l
}

// yamlMapping appends the entries of a document, mapping or alias node to b.
func yamlMapping(n *yaml.Node, b Branch, commentsDone bool) (Branch, error) {
	if !commentsDone {
		b = yamlComments(b, n.HeadComment, false)
		b = yamlComments(b, n.LineComment, false)
	}
	var err error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if b, err = yamlMapping(c, b, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("a YAML document that is a sequence is not supported")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			b = yamlComments(b, k.HeadComment, false)
			b = yamlComments(b, k.LineComment, false)
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				b = yamlComments(b, v.HeadComment, false)
				b = yamlComments(b, v.LineComment, true)
			}
			var key any
			if err := k.Decode(&key); err != nil {
				return nil, errors.New("not valid YAML")
			}
			val, err := yamlValue(v, scalar)
			if err != nil {
				return nil, err
			}
			b = append(b, Item{Key: key, Value: val})
			if scalar {
				b = yamlComments(b, v.FootComment, false)
			}
			b = yamlComments(b, k.FootComment, false)
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!null" {
			return nil, errors.New("a YAML document that is a value is not supported")
		}
		return b, nil
	case yaml.AliasNode:
		if b, err = yamlMapping(n.Alias, b, false); err != nil {
			return nil, err
		}
	}
	if !commentsDone {
		b = yamlComments(b, n.FootComment, false)
	}
	return b, nil
}

// yamlValue converts a value node: a mapping to a Branch, a sequence to a list (its
// items' comments in it), a scalar to what yaml decodes it to.
func yamlValue(n *yaml.Node, commentsDone bool) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commentsDone {
			l = yamlListComments(l, n.HeadComment, false)
			l = yamlListComments(l, n.LineComment, false)
		}
		for _, item := range n.Content {
			l = yamlListComments(l, item.HeadComment, false)
			l = yamlListComments(l, item.LineComment, true)
			v, err := yamlValue(item, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = yamlListComments(l, item.FootComment, false)
		}
		if !commentsDone {
			l = yamlListComments(l, n.FootComment, false)
		}
		return l, nil
	case yaml.MappingNode:
		return yamlMapping(n, Branch{}, commentsDone)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, errors.New("not valid YAML")
		}
		return v, nil
	case yaml.AliasNode:
		return yamlValue(n.Alias, false)
	}
	return nil, nil
}

// emitYAML writes branches as a stream of YAML documents, indented by 4 as SOPS writes
// them, comments before the entry they preceded.
func emitYAML(branches []Branch) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)
	for _, b := range branches {
		m := &yaml.Node{Kind: yaml.MappingNode}
		yamlAppendBranch(b, m)
		if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
			return nil, errors.New("cannot write YAML")
		}
	}
	if err := enc.Close(); err != nil {
		return nil, errors.New("cannot write YAML")
	}
	return buf.Bytes(), nil
}

func yamlNode(v any) *yaml.Node {
	switch v := v.(type) {
	case Branch:
		m := &yaml.Node{Kind: yaml.MappingNode}
		yamlAppendBranch(v, m)
		return m
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		yamlAppendList(v, s)
		return s
	}
	n := &yaml.Node{}
	_ = n.Encode(v) // scalars of the model always encode
	return n
}

// commentText joins comment lines as yaml.Node comments are held ("#line").
func commentText(lines []string) string {
	return "#" + strings.Join(lines, "\n#")
}

func addComment(dst *string, lines []string, before bool) {
	if len(lines) == 0 {
		return
	}
	switch {
	case *dst == "":
		*dst = commentText(lines)
	case before:
		*dst = commentText(lines) + "\n" + *dst
	default:
		*dst += "\n" + commentText(lines)
	}
}

func yamlAppendBranch(b Branch, m *yaml.Node) {
	var head, inline []string
	first := true
	for _, item := range b {
		if c, ok := item.Key.(Comment); ok {
			if c.Inline {
				inline = append(inline, c.Value)
			} else {
				head = append(head, c.Value)
			}
			continue
		}
		if first {
			addComment(&m.HeadComment, head, true)
			head, first = nil, false
		}
		k := &yaml.Node{}
		_ = k.Encode(item.Key)
		addComment(&k.HeadComment, head, true)
		v := yamlNode(item.Value)
		addComment(&v.LineComment, inline, false)
		head, inline = nil, nil
		m.Content = append(m.Content, k, v)
	}
	rest := append(head, inline...)
	if first {
		addComment(&m.HeadComment, rest, true)
	} else {
		addComment(&m.Content[len(m.Content)-2].FootComment, rest, false)
	}
}

func yamlAppendList(l []any, s *yaml.Node) {
	var head, inline []string
	first := true
	for _, e := range l {
		if c, ok := e.(Comment); ok {
			if c.Inline {
				inline = append(inline, c.Value)
			} else {
				head = append(head, c.Value)
			}
			continue
		}
		if first {
			addComment(&s.HeadComment, head, true)
			head, first = nil, false
		}
		n := yamlNode(e)
		addComment(&n.HeadComment, head, true)
		addComment(&n.LineComment, inline, false)
		head, inline = nil, nil
		s.Content = append(s.Content, n)
	}
	rest := append(head, inline...)
	if first {
		addComment(&s.HeadComment, rest, true)
	} else {
		addComment(&s.Content[len(s.Content)-1].FootComment, rest, false)
	}
}
