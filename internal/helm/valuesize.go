package helm

import (
	"fmt"
	"reflect"
)

// valueSize estimates the bytes a value takes once printed or serialized: the length of
// its strings and byte slices, 8 for any other scalar, 1 for each node (list element,
// map entry, field). It stops counting once past limit (a value may be a list of many
// references to one large string, or hold itself), so its cost is bounded by limit,
// not by the value's printed size.
func valueSize(v any, limit int64) int64 {
	var n int64
	var walk func(rv reflect.Value, depth int)
	walk = func(rv reflect.Value, depth int) {
		if n > limit {
			return
		}
		if depth > 10_000 {
			n = limit + 1
			return
		}
		n++
		switch rv.Kind() {
		case reflect.Invalid:
		case reflect.Interface, reflect.Pointer:
			if !rv.IsNil() {
				walk(rv.Elem(), depth+1)
			}
		case reflect.String:
			n += int64(rv.Len())
		case reflect.Slice, reflect.Array:
			if rv.Type().Elem().Kind() == reflect.Uint8 {
				n += int64(rv.Len())
				return
			}
			for i := 0; i < rv.Len() && n <= limit; i++ {
				walk(rv.Index(i), depth+1)
			}
		case reflect.Map:
			it := rv.MapRange()
			for it.Next() && n <= limit {
				walk(it.Key(), depth+1)
				walk(it.Value(), depth+1)
			}
		case reflect.Struct:
			for i := 0; i < rv.NumField() && n <= limit; i++ {
				walk(rv.Field(i), depth+1)
			}
		default:
			n += 8
		}
	}
	walk(reflect.ValueOf(v), 0)
	return n
}

// sizeCharge charges what v would take printed to the render's string budget and
// returns v as it is (gitsyncSize, see sizedFuncs).
func (b *budget) sizeCharge(v any) (any, error) {
	b.mu.Lock()
	left := b.maxByte - b.bytes
	b.mu.Unlock()
	if err := b.charge(0, valueSize(v, max(left, 0))); err != nil {
		return nil, err
	}
	return v, nil
}

var (
	errorType    = reflect.TypeFor[error]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
)

// printedForm is what text/template prints for v (its printValue), for gitsyncOut.
//
// text/template calls the String or Error method of a pointer to the value when the
// value is addressable: a field reached through a pointer (.Capabilities.KubeVersion,
// whose String has a pointer receiver) or a variable holding one. gitsyncOut receives
// a copy, and the value is taken as addressable; the one difference left is such a
// struct held in a map or returned by a function, which text/template prints field by
// field and printedForm with its method.
func printedForm(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "<no value>", nil
	}
	rv := reflect.ValueOf(v)
	// text/template's indirect (reflect.ValueOf never returns an Interface: the loop
	// only starts at a pointer).
	for (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && !rv.IsNil() {
		rv = rv.Elem()
	}
	if t := rv.Type(); !t.Implements(errorType) && !t.Implements(stringerType) {
		pt := reflect.PointerTo(t)
		switch {
		case pt.Implements(errorType) || pt.Implements(stringerType):
			if !rv.CanAddr() {
				cp := reflect.New(t)
				cp.Elem().Set(rv)
				rv = cp.Elem()
			}
			rv = rv.Addr()
		case rv.Kind() == reflect.Chan || rv.Kind() == reflect.Func:
			return "", fmt.Errorf("can't print a value of type %s", rv.Type())
		}
	}
	return fmt.Sprint(rv.Interface()), nil
}
