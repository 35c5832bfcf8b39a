package cli

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// masked replaces every value of a Secret's data and stringData.
	masked = "***"
	// maskedChanged replaces a Secret value that Git changes, so that a diff shows the
	// change without either value.
	maskedChanged = "*** (changed)"
)

func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// maskSecret replaces the values of a Secret's data and stringData with "***". When
// other is given (the same Secret as it is elsewhere), a value that differs from
// other's becomes "*** (changed)". Non-Secrets are left alone.
func maskSecret(obj, other *unstructured.Unstructured) {
	if obj == nil || !isSecret(obj) {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := obj.Object[field].(map[string]any)
		if !ok {
			continue
		}
		var theirs map[string]any
		if other != nil {
			theirs, _ = other.Object[field].(map[string]any)
		}
		for k, v := range m {
			m[k] = masked
			if other != nil {
				if w, ok := theirs[k]; !ok || w != v {
					m[k] = maskedChanged
				}
			}
		}
	}
	// kubectl's last-applied annotation holds the whole Secret.
	cleanAnnotations(obj)
}

func cleanAnnotations(obj *unstructured.Unstructured) {
	a := obj.GetAnnotations()
	if _, ok := a["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		if len(a) == 0 {
			a = nil
		}
		obj.SetAnnotations(a)
	}
}

// forDisplay returns a copy of obj without the fields a diff never compares (status,
// managedFields, resourceVersion, generation, uid, creationTimestamp, kubectl's
// last-applied annotation) and without the ignored fields.
func forDisplay(obj *unstructured.Unstructured, ignore []string) *unstructured.Unstructured {
	o := obj.DeepCopy()
	delete(o.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	cleanAnnotations(o)
	for _, p := range ignore {
		removePointer(o.Object, p)
	}
	return o
}

// removePointer deletes the field at an RFC 6901 pointer; list items may be given by
// index or, as drift.Field paths name them, by key=value.
func removePointer(obj map[string]any, pointer string) {
	if !strings.HasPrefix(pointer, "/") {
		return
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	var cur any = obj
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				delete(c, t)
				return
			}
			cur = c[t]
		case []any:
			idx := listItem(c, t)
			if idx < 0 || last {
				return
			}
			cur = c[idx]
		default:
			return
		}
	}
}

func listItem(list []any, token string) int {
	if n, err := strconv.Atoi(token); err == nil {
		if n >= 0 && n < len(list) {
			return n
		}
		return -1
	}
	k, v, ok := strings.Cut(token, "=")
	if !ok {
		return -1
	}
	for i, item := range list {
		if m, ok := item.(map[string]any); ok && strings.Trim(toString(m[k]), `"`) == strings.Trim(v, `"`) {
			return i
		}
	}
	return -1
}

func toString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// maskValues replaces every sensitive value (render.Result.Sensitive: decrypted values,
// variables from Secrets) in s with "***".
func maskValues(s string, sensitive []string) string {
	for _, v := range sensitive {
		if v != "" {
			s = strings.ReplaceAll(s, v, masked)
		}
	}
	return s
}

// maskingWriter masks the sensitive values in each write; the callers write whole lines
// or documents, and sensitive values hold no newline.
type maskingWriter struct {
	w         io.Writer
	sensitive []string
}

func (m maskingWriter) Write(p []byte) (int, error) {
	if len(m.sensitive) == 0 {
		return m.w.Write(p)
	}
	if _, err := io.WriteString(m.w, maskValues(string(p), m.sensitive)); err != nil {
		return 0, err
	}
	return len(p), nil
}
