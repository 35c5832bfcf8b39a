package appset

import (
	"fmt"
	"sort"
	"strings"
)

// Params is one parameter set: nested values (strings, numbers, booleans, maps, lists) as
// Argo CD's goTemplate mode gives them, so that `{{ .path.basename }}` reads a nested key.
type Params map[string]any

// merge returns a copy of base with over's keys laid on top (maps merged key by key).
func merge(base, over Params) Params {
	out := Params{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = map[string]any(merge(bm, om))
				continue
			}
		}
		out[k] = v
	}
	return out
}

// combine joins the sets of a matrix: a key both give with different values is an error.
func combine(a, b Params) (Params, error) {
	out := Params{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		prev, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		pm, pok := prev.(map[string]any)
		vm, vok := v.(map[string]any)
		if pok && vok {
			m, err := combine(pm, vm)
			if err != nil {
				return nil, fmt.Errorf("%s.%w", k, err)
			}
			out[k] = map[string]any(m)
			continue
		}
		if fmt.Sprint(prev) != fmt.Sprint(v) {
			return nil, fmt.Errorf("%s: both generators give it, with different values", k)
		}
	}
	return out, nil
}

// lookup reads a dotted key (`a.b`) from p: a key with the dots in it is tried first.
func lookup(p Params, key string) (any, bool) {
	if v, ok := p[key]; ok {
		return v, true
	}
	head, rest, ok := strings.Cut(key, ".")
	if !ok {
		return nil, false
	}
	m, ok := p[head].(map[string]any)
	if !ok {
		return nil, false
	}
	return lookup(m, rest)
}

// Flatten lists p's leaves as dotted keys, sorted (for `gitsync build` and messages).
func Flatten(p Params) []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				walk(join(prefix, k), x)
			}
		case Params:
			walk(prefix, map[string]any(t))
		case []any:
			for i, x := range t {
				walk(join(prefix, fmt.Sprint(i)), x)
			}
		default:
			out = append(out, prefix+"="+fmt.Sprint(t))
		}
	}
	walk("", map[string]any(p))
	sort.Strings(out)
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// normalize makes a name fit a DNS-1123 label: lower case, other runes become '-'.
func normalize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-.")
}
