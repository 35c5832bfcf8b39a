package yamlbudget

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"go.yaml.in/yaml/v3"
)

// bomb is 14 lines whose aliases expand to 9^7 (4.8 million) values, as document
// content of a ConfigMap named name.
func bomb(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
	b.WriteString("  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// wide is a document whose aliases expand to about n values (n/1000 aliases of a list of 1,000).
func wide(n int) string {
	return "a: &a [" + strings.Repeat("x, ", 999) + "x]\nb: [" + strings.Repeat("*a, ", n/1000-1) + "*a]\n"
}

const small = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A bomb is refused in whichever document of the stream it is, and so is a stream
// whose documents are each under the limit but not together; the check costs the size
// of the text, not of the expansion.
func TestCheckCountsEveryDocument(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"bomb in document 1", bomb("a"), "f.yaml: document 1 expands to more than 1048576 values through YAML aliases"},
		{"bomb in document 2", small + "---\n" + bomb("b"), "f.yaml: document 2 expands to more than 1048576 values through YAML aliases"},
		{"bomb in document 3", small + "---\n" + small + "---\n" + bomb("c"), "f.yaml: document 3 expands"},
		{"documents each under the limit", wide(600_000) + "---\n" + wide(600_000), "f.yaml: documents 1 to 2 expand to more than 1048576 values"},
		{"alias to its own ancestor in document 2", small + "---\na: &a [*a]\n", "f.yaml: document 2 expands"},
		{"deep nesting", small + "---\n" + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + "\n", "f.yaml: document 2 nests deeper than 1000 levels"},
		{"deep through aliases", small + "---\n" + deepAliases(), "f.yaml: document 2 nests deeper than 1000 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var err error
			alloc := allocated(func() { err = Check("f.yaml", []byte(tt.data)) })
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "bytes allocated by the check")
		})
	}
}

// deepAliases nests 20 levels of 60 by aliasing the level before: 1,200 levels expanded.
func deepAliases() string {
	var b strings.Builder
	b.WriteString("l0: &l0 x\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "l%d: &l%d %s*l%d%s\n", i, i, strings.Repeat("[", 60), i-1, strings.Repeat("]", 60))
	}
	return b.String()
}

// One budget counts every stream checked against it: streams each under the limit
// are refused once together they are over the budget's.
func TestBudgetCountsAcrossStreams(t *testing.T) {
	g := NewWithT(t)
	b := New(MaxValues)
	g.Expect(b.Check("a.yaml", []byte(wide(600_000)))).To(Succeed())
	err := b.Check("b.yaml", []byte(small+"---\n"+wide(600_000)))
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("b.yaml: the documents parsed so far hold more than 1048576 values"))

	var n yaml.Node
	g.Expect(yaml.Unmarshal([]byte(wide(600_000)), &n)).To(Succeed())
	g.Expect(New(MaxValues).Document("c.yaml", 1, &n)).To(Succeed())
	b = New(1000)
	g.Expect(b.Document("c.yaml", 4, &n)).To(MatchError(ErrTooLarge))
}

// What a sane file holds passes: small aliases, several documents, text that is not YAML.
func TestCheckAllows(t *testing.T) {
	g := NewWithT(t)
	for _, data := range []string{
		"a: &a [x, y]\nb: [*a, *a]\n---\nc: d\n",
		small + "---\n" + small + "---\n",
		wide(500_000),
		"not: [yaml\n",
		"key=value\nother=1\n",
		strings.Repeat("[", 900) + strings.Repeat("]", 900) + "\n",
		"",
	} {
		g.Expect(Check("f", []byte(data))).To(Succeed(), "%.60q", data)
	}
}

// Bytes are capped, and a file dense enough to hold more values than one stream may is
// refused before it is parsed.
func TestPrescan(t *testing.T) {
	g := NewWithT(t)
	err := Check("big.yaml", make([]byte, MaxBytes+1))
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("big.yaml is 8388609 bytes, over the 8388608 bytes"))
	err = Check("dense.yaml", []byte(flowOnes(600_000)))
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("dense.yaml: the file may hold up to 1200002 YAML values"))
}

// A tagged scalar goes to the caller's check, named by file; an untagged one does not.
func TestCheckScalars(t *testing.T) {
	g := NewWithT(t)
	var seen []string
	scalar := func(n *yaml.Node) error {
		seen = append(seen, n.Value)
		if n.Value == "bad" {
			return fmt.Errorf("line %d: refused", n.Line)
		}
		return nil
	}
	g.Expect(New(MaxValues).CheckScalars("f", []byte("a: !!str 1\nb: 2\n"), scalar)).To(Succeed())
	g.Expect(seen).To(Equal([]string{"1"}))
	err := New(MaxValues).CheckScalars("f", []byte("a: 1\n---\nb: !!int bad\n"), scalar)
	g.Expect(err).To(MatchError(ContainSubstring("f: line 3: refused")))
}

// The estimate is an upper bound of the nodes yaml.v3 makes, whatever the style.
func TestEstimateNodesBoundsNodes(t *testing.T) {
	samples := []string{
		"a: b\n", "- - - a\n", "[1, [2, [3]], {a: b, c}]\n", "a:\n  b:\n    - c\n    -\n    - {}\n",
		"? [a, b]\n: c\n", "a: &x [1, 2]\nb: *x\nc: !!str 3\n", "---\n---\na: b\n...\n---\n- x\n",
		"key: |\n  text: with, indicators - inside\n", "{a: 1, b: [x, y, ], c: {d: e}}\n", flowOnes(100), "x\n", "",
	}
	for _, name := range []string{"../build/testdata/kustomize/base/deployment.yaml", "../build/testdata/kustomize/base/kustomization.yaml"} {
		if data, err := os.ReadFile(name); err == nil {
			samples = append(samples, string(data))
		}
	}
	for _, s := range samples {
		dec := yaml.NewDecoder(strings.NewReader(s))
		nodes := 0
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				break
			}
			nodes += countNodes(&n)
		}
		if est := estimateNodes([]byte(s)); est < nodes {
			t.Errorf("estimateNodes(%q) = %d, below the %d nodes parsed", s, est, nodes)
		}
	}
}

// countNodes counts the nodes of a yaml.v3 tree as parsed (an alias is one node).
func countNodes(n *yaml.Node) int {
	total := 1
	for _, c := range n.Content {
		total += countNodes(c)
	}
	return total
}

// flowOnes is YAML's densest form: n values in size 2n.
func flowOnes(n int) string {
	return "[" + strings.Repeat("1,", n-1) + "1]\n"
}
