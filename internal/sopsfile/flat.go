package sopsfile

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// dotenvPrefix starts the keys of the flattened metadata in a dotenv file.
const dotenvPrefix = metadataKey + "_"

// loadDotenv reads KEY=value lines ("\n" in a value is a newline) and #comments.
func loadDotenv(data []byte) ([]Branch, error) {
	var b Branch
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			b = append(b, Item{Key: Comment{Value: string(line[1:])}})
			continue
		}
		k, v, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return nil, errors.New("a dotenv line without '='")
		}
		b = append(b, Item{Key: string(k), Value: strings.ReplaceAll(string(v), `\n`, "\n")})
	}
	return []Branch{b}, nil
}

// dotenvMetadata moves the "sops_" entries of a dotenv file out of it and reads them.
func dotenvMetadata(branches []Branch) (*Metadata, error) {
	var meta []Item
	kept := branches[0][:0]
	for _, item := range branches[0] {
		if k, ok := item.Key.(string); ok && strings.HasPrefix(k, dotenvPrefix) {
			meta = append(meta, Item{Key: k[len(dotenvPrefix):], Value: item.Value})
			continue
		}
		kept = append(kept, item)
	}
	branches[0] = kept
	if meta == nil {
		return nil, ErrNoMetadata
	}
	m, err := unflatten(meta)
	if err != nil {
		return nil, err
	}
	return parseMetadata(m)
}

// emitDotenv writes KEY=value lines, newlines in values as "\n".
func emitDotenv(b Branch) ([]byte, error) {
	var buf bytes.Buffer
	for _, item := range b {
		if c, ok := item.Key.(Comment); ok {
			buf.WriteString("#" + c.Value + "\n")
			continue
		}
		var v string
		switch val := item.Value.(type) {
		case string:
			v = strings.ReplaceAll(val, "\n", `\n`)
		case Branch, []any:
			return nil, errors.New("a dotenv file cannot hold a structured value")
		default:
			v = scalarString(val)
		}
		buf.WriteString(item.Key.(string) + "=" + v + "\n")
	}
	return buf.Bytes(), nil
}

// scalarString writes a non-string scalar as SOPS does in dotenv and INI files.
func scalarString(v any) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsAny(s, ".E") {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case string:
		return v
	case time.Time:
		return v.Format(time.RFC3339)
	}
	return ""
}

// iniOptions are SOPS' options for INI files.
var iniOptions = ini.LoadOptions{AllowNonUniqueSections: true}

// loadINI reads an INI file (gopkg.in/ini.v1, as SOPS does) into one branch of
// sections, each a branch of its keys with their comments.
func loadINI(data []byte) ([]Branch, error) {
	f, err := ini.LoadSources(iniOptions, data)
	if err != nil {
		return nil, errors.New("not a valid INI file")
	}
	var b Branch
	for _, s := range f.Sections() {
		var items Branch
		if s.Comment != "" {
			items = append(items, Item{Key: Comment{Value: stripINIComment(s.Comment)}})
		}
		for _, k := range s.Keys() {
			items = append(items, Item{Key: k.Name(), Value: k.Value()})
			if k.Comment != "" {
				items = append(items, Item{Key: Comment{Value: stripINIComment(k.Comment)}})
			}
		}
		b = append(b, Item{Key: s.Name(), Value: items})
	}
	return []Branch{b}, nil
}

func stripINIComment(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

// iniMetadata reads the [sops] section (flattened, "\n" escaped in values).
func iniMetadata(branches []Branch) (*Metadata, error) {
	meta, err := extractEntry(branches)
	if err != nil {
		return nil, err
	}
	entries, ok := meta.(Branch)
	if !ok {
		return nil, errors.New("the sops section is not a mapping")
	}
	for i, e := range entries {
		if s, ok := e.Value.(string); ok {
			entries[i].Value = strings.ReplaceAll(s, `\n`, "\n")
		}
	}
	m, err := unflatten(entries)
	if err != nil {
		return nil, err
	}
	return parseMetadata(m)
}

// emitINI writes the sections of b as SOPS does, through gopkg.in/ini.v1.
func emitINI(b Branch) ([]byte, error) {
	f := ini.Empty(iniOptions)
	f.DeleteSection(ini.DefaultSection)
	for _, item := range b {
		name, ok := item.Key.(string)
		if !ok {
			continue
		}
		s, err := f.NewSection(name)
		if err != nil {
			return nil, errors.New("cannot write an INI section")
		}
		entries, ok := item.Value.(Branch)
		if !ok {
			return nil, errors.New("an INI section is not a mapping")
		}
		if len(entries) > 0 {
			if c, ok := entries[0].Key.(Comment); ok {
				s.Comment = c.Value
				entries = entries[1:]
			}
		}
		var last *ini.Key
		for _, e := range entries {
			if c, ok := e.Key.(Comment); ok {
				if last != nil {
					last.Comment = c.Value
				}
				continue
			}
			if last, err = s.NewKey(e.Key.(string), scalarString(e.Value)); err != nil {
				return nil, errors.New("cannot write an INI key")
			}
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return nil, errors.New("cannot write INI")
	}
	return buf.Bytes(), nil
}
