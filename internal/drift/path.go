package drift

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Paths: following a fieldpath.Path in an object, writing it in Field.Path's format, and
// reading ignore rules (RFC 6901 pointers).

// location is what a fieldpath.Path points at in an object.
type location struct {
	found bool
	value any
	// indexTokens is the RFC 6901 form of the path, list items given by index.
	indexTokens []string
}

// locate follows p in obj.
func locate(obj map[string]any, p fieldpath.Path) location {
	var cur any = obj
	tokens := make([]string, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return location{}
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return location{}
			}
			tokens = append(tokens, *pe.FieldName)
		case pe.Key != nil, pe.Value != nil, pe.Index != nil:
			list, ok := cur.([]any)
			if !ok {
				return location{}
			}
			i := listIndex(list, pe)
			if i < 0 {
				return location{}
			}
			cur = list[i]
			tokens = append(tokens, strconv.Itoa(i))
		default:
			return location{}
		}
	}
	return location{found: true, value: cur, indexTokens: tokens}
}

// listIndex returns the index of the item of list that pe selects, or -1.
func listIndex(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range list {
			if value.Equals(*pe.Value, value.NewValueInterface(item)) {
				return i
			}
		}
	case pe.Key != nil:
	items:
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, k := range *pe.Key {
				v, ok := m[k.Name]
				if !ok || !value.Equals(k.Value, value.NewValueInterface(v)) {
					continue items
				}
			}
			return i
		}
	}
	return -1
}

// formatPathTokens returns p as unescaped JSON pointer tokens in Field.Path's format.
func formatPathTokens(p fieldpath.Path) []string {
	tokens := make([]string, len(p))
	for i, pe := range p {
		switch {
		case pe.FieldName != nil:
			tokens[i] = *pe.FieldName
		case pe.Key != nil:
			parts := make([]string, len(*pe.Key))
			for j, k := range *pe.Key {
				parts[j] = k.Name + "=" + formatKeyValue(k.Value)
			}
			tokens[i] = strings.Join(parts, ",")
		case pe.Value != nil:
			tokens[i] = formatKeyValue(*pe.Value)
		case pe.Index != nil:
			tokens[i] = strconv.Itoa(*pe.Index)
		default:
			tokens[i] = pe.String()
		}
	}
	return tokens
}

// formatKeyValue writes a list key or set value: strings bare when that cannot be
// mistaken for another value or for the separators, JSON otherwise.
func formatKeyValue(v value.Value) string {
	if v.IsString() {
		s := v.AsString()
		if s != "" && !strings.ContainsAny(s, `,="`) && !looksLikeJSONLiteral(s) {
			return s
		}
	}
	b, err := json.Marshal(v.Unstructured())
	if err != nil {
		return value.ToString(v)
	}
	return string(b)
}

func looksLikeJSONLiteral(s string) bool {
	switch s {
	case "true", "false", "null":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// joinPointer escapes tokens (RFC 6901) and joins them into a pointer.
func joinPointer(tokens []string) string {
	var b strings.Builder
	r := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(r.Replace(t))
	}
	return b.String()
}

// parsePointer splits an RFC 6901 pointer into unescaped tokens. "" is the whole object.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return []string{}, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("not a JSON pointer: must start with \"/\"")
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("not a JSON pointer: \"~\" must be followed by 0 or 1")
			}
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return tokens, nil
}

// underAny says whether path equals or is under one of prefixes.
func underAny(path []string, prefixes [][]string) bool {
	for _, prefix := range prefixes {
		if len(prefix) <= len(path) && slices.Equal(path[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}
