package build

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDecodeManifestsValues(t *testing.T) {
	g := NewWithT(t)
	objs, err := decodeManifests("values.yaml", []byte(`apiVersion: v1
kind: ConfigMap
metadata: &meta
  name: values
  labels: &labels {a: b}
spec:
  labels: *labels
  merged:
    <<: [*labels, {a: lost, c: d}]
    e: f
  words: yes
  date: 2024-01-01
  hex: 0x10
  big: 18446744073709551615
  float: 1.5
  bool: true
  none: ~
  tagged: !custom text
`), newBudget(maxRenderValues))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	spec := objs[0].Object["spec"].(map[string]any)
	g.Expect(spec).To(Equal(map[string]any{
		"labels": map[string]any{"a": "b"},
		"merged": map[string]any{"a": "b", "c": "d", "e": "f"},
		"words":  "yes",
		"date":   "2024-01-01",
		"hex":    int64(16),
		"big":    float64(18446744073709551615),
		"float":  1.5,
		"bool":   true,
		"none":   nil,
		"tagged": "text",
	}))
	g.Expect(objs[0].DeepCopy().Object).To(Equal(objs[0].Object))
}

func TestDecodeManifestsErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "syntax error line is counted from the file start", data: "apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\nc: d: e\n", want: "f.yaml: yaml: line 5"},
		{name: "infinity", data: "apiVersion: v1\nkind: X\nmetadata: {name: x}\nv: .inf\n", want: "line 4: .inf cannot be represented in JSON"},
		{name: "list at top level", data: "- a\n- b\n", want: "expected a Kubernetes object, found a list"},
		{name: "complex key", data: "? [a]\n: b\n", want: "mapping keys must be scalars"},
		{name: "billion laughs", data: laughs(), want: "expands to more than"},
		{name: "bad merge", data: "a: &a [1]\nb:\n  <<: *a\n", want: "merge key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := decodeManifests("f.yaml", []byte(tt.data), newBudget(maxRenderValues))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(err.Error()).To(ContainSubstring("f.yaml"))
		})
	}
}

// laughs is a small document whose aliases expand to 10^9 values.
func laughs() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		prev := "*l" + string(rune('0'+i-1))
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(prev)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestDecimal(t *testing.T) {
	g := NewWithT(t)
	for s, want := range map[string]int64{"0": 0, "42": 42, "-7": -7, "123456789012345678": 123456789012345678} {
		v, ok := decimal(s)
		g.Expect(ok).To(BeTrue(), s)
		g.Expect(v).To(Equal(want), s)
	}
	for _, s := range []string{"", "-", "+1", "007", "0x1F", "0o17", "1_000", "1.5", "1e3", "9223372036854775807", "--1"} {
		_, ok := decimal(s)
		g.Expect(ok).To(BeFalse(), s) // left to yaml.v3
	}
}
