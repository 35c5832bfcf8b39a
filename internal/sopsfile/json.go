package sopsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// errJSON is the error of JSON that does not parse; the decoder's own message may
// quote the document, so it is not kept.
var errJSON = errors.New("not valid JSON")

// loadJSON reads a JSON object into a branch, keeping its key order. Numbers become int
// when they are integers in int64's range, float64 otherwise (as SOPS reads them).
func loadJSON(data []byte) ([]Branch, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, errJSON
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("a JSON document that is not an object is not supported")
	}
	b, err := jsonObject(dec)
	if err != nil {
		return nil, err
	}
	return []Branch{b}, nil
}

// jsonObject reads the entries of an object whose "{" was read.
func jsonObject(dec *json.Decoder) (Branch, error) {
	var b Branch
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, errJSON
		}
		if d, ok := t.(json.Delim); ok && d == '}' {
			return b, nil
		}
		key, ok := t.(string)
		if !ok {
			return nil, errJSON
		}
		v, err := jsonValue(dec)
		if err != nil {
			return nil, err
		}
		b = append(b, Item{Key: key, Value: v})
	}
}

// jsonValue reads one value.
func jsonValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, errJSON
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			return jsonObject(dec)
		case '[':
			l := []any{}
			for dec.More() {
				v, err := jsonValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil { // "]"
				return nil, errJSON
			}
			return l, nil
		}
		return nil, errJSON
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i), nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, errJSON
		}
		return f, nil
	default:
		return t, nil // string, bool, nil
	}
}

// emitJSON writes a branch as SOPS writes plain JSON: one entry per line, no indent.
func emitJSON(b Branch) ([]byte, error) {
	var buf bytes.Buffer
	if err := jsonWrite(&buf, b); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", ""); err != nil {
		return nil, errors.New("cannot write JSON")
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func jsonWrite(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case Branch:
		buf.WriteByte('{')
		n := 0
		for _, item := range v {
			k, ok := item.Key.(string)
			if !ok {
				continue // a comment
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteString(": ")
			if err := jsonWrite(buf, item.Value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		n := 0
		for _, e := range v {
			if _, ok := e.(Comment); ok {
				continue
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			if err := jsonWrite(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return errors.New("cannot write JSON")
		}
		buf.Write(b)
	}
	return nil
}

// binaryKey is the one key of the JSON envelope of an encrypted binary file.
const binaryKey = "data"

// emitBinary returns the content of a binary file: the envelope's "data" string.
func emitBinary(branches []Branch) ([]byte, error) {
	if len(branches) != 1 {
		return nil, errors.New("a binary file has one document")
	}
	for _, item := range branches[0] {
		if item.Key == binaryKey {
			s, ok := item.Value.(string)
			if !ok {
				return nil, errors.New("the data of a binary file is not a string")
			}
			return []byte(s), nil
		}
	}
	return nil, errors.New("no data in the binary file")
}
