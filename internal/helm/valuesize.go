package helm

import "reflect"

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
