package sopsfile

import (
	"errors"
	"strconv"
	"strings"
)

// Separators of SOPS' flattened metadata keys (dotenv and INI files hold no
// structure): "key_groups__list_0__map_age__list_0__map_enc".
const (
	mapSeparator  = "__map_"
	listSeparator = "__list_"
)

// unflatten rebuilds the metadata mapping from flattened entries (keys without the
// "sops_" prefix or outside the [sops] section).
func unflatten(entries []Item) (map[string]any, error) {
	root := map[string]any{}
	for _, e := range entries {
		key, ok := e.Key.(string)
		if !ok {
			continue
		}
		if err := place(root, key, e.Value); err != nil {
			return nil, err
		}
	}
	out, err := lists(root)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// place sets the value at the flattened key under root. Lists are built as maps from
// position to value first; lists turns them into slices.
func place(root map[string]any, key string, value any) error {
	cur := root
	segs := splitFlat(key)
	for i, s := range segs {
		if i == len(segs)-1 {
			if _, dup := cur[s]; dup {
				return errors.New("duplicate flattened metadata key")
			}
			cur[s] = value
			return nil
		}
		next, ok := cur[s].(map[string]any)
		if !ok {
			if _, taken := cur[s]; taken {
				return errors.New("flattened metadata key is both a value and a structure")
			}
			next = map[string]any{}
			cur[s] = next
		}
		cur = next
	}
	return nil
}

// splitFlat cuts a flattened key at its separators; a list position becomes "#N".
func splitFlat(key string) []string {
	var out []string
	list := false
	for {
		m := strings.Index(key, mapSeparator)
		l := strings.Index(key, listSeparator)
		next, sepLen, nextList := -1, 0, false
		switch {
		case m >= 0 && (l < 0 || m < l):
			next, sepLen = m, len(mapSeparator)
		case l >= 0:
			next, sepLen, nextList = l, len(listSeparator), true
		}
		seg := key
		if next >= 0 {
			seg = key[:next]
		}
		if list {
			seg = "#" + seg
		}
		out = append(out, seg)
		if next < 0 {
			return out
		}
		key, list = key[next+sepLen:], nextList
	}
}

// lists turns maps whose keys are all list positions ("#0", "#1", …) into slices.
func lists(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	isList := len(m) > 0
	for k, e := range m {
		if !strings.HasPrefix(k, "#") {
			isList = false
		}
		conv, err := lists(e)
		if err != nil {
			return nil, err
		}
		m[k] = conv
	}
	if !isList {
		return m, nil
	}
	out := make([]any, len(m))
	for k, e := range m {
		i, err := strconv.Atoi(k[1:])
		if err != nil || i < 0 || i >= len(out) {
			return nil, errors.New("incomplete list in flattened metadata")
		}
		out[i] = e
	}
	return out, nil
}
