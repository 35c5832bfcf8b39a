package helm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
)

// instrumentCases are templates whose output must not change when instrumented: white
// space trimmed and not, every kind of list, delimiters inside strings, tpl arguments.
var instrumentCases = map[string]string{
	"text only":             "a: 1\nb: 2\n",
	"action":                "a: {{ .a }}\n",
	"trimmed action":        "a:   {{- .a -}}   \nb\n",
	"range":                 "{{ range .l }}- {{ . }}\n{{ end }}",
	"range trimmed":         "x:\n{{- range .l }}\n  - {{ . }}\n{{- end }}\ny",
	"range trims the body":  "{{ range .l -}}   \n  {{ . }} {{- end }}",
	"range body trims":      "{{ range $i, $v := .l }}\n{{- $i }}={{ $v }}\n{{- end }}",
	"empty range":           "[{{ range .l }}{{ end }}]",
	"range else":            "{{ range .none }}x{{ else }}empty {{ .a }}{{ end }}",
	"range over int":        "{{ range 3 }}{{ . }},{{ end }}",
	"break continue":        "{{ range .l }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}",
	"if else if":            "{{ if .no }}a{{ else if .a }}  b {{ .a }}{{ else }}c{{ end }}",
	"with else with":        "{{ with .no }}a{{ else with .a }}b{{ . }}{{ else }}c{{ end }}",
	"define and template":   "{{ define \"d\" }}  x={{ . }}\n{{ end }}{{ template \"d\" .a }}{{- template \"d\" 2 }}",
	"block":                 "{{ block \"b\" .a }}b={{ . }}{{ end }}",
	"strings with braces":   "{{ \"}}\" }} {{ `}}` }} {{ printf \"%s)\" \"(\" }} {{ '}' }}",
	"comment":               "{{/* a comment }} */}}{{ range .l }}{{/* c */}}{{ . }}{{ end }}",
	"assignments":           "{{ $x := 1 }}{{ $x = 2 }}{{ $x }}",
	"missing value":         "[{{ .missing }}] [{{ .m.missing }}]",
	"nil":                   "{{ $n := .missing }}{{ $n }}|{{ printf \"%v\" nil }}",
	"pointer and numbers":   "{{ .p }} {{ .f }} {{ .l }} {{ .m }}",
	"trim marker newline":   "a {{ .a\n-}}  b",
	"tpl field":             "{{ tpl .t . }}",
	"tpl in parentheses":    "{{ tpl (printf \"%s\" .t) . }}|{{ tpl ( .t ) . }}",
	"serializers":           `{{ toJson .m }}|{{ .m | toJson }}|{{ printf "%s-%v" .a .l }}|{{ .a | quote }}|{{ print .a .f }}|{{ printf "%d" 3 | quote }}|{{ toJson (index .l 0) }}|{{ quote nil }}`,
	"tpl in a pipeline":     "{{ tpl .t . | upper }}",
	"tpl of a chain":        "{{ $x := . }}{{ tpl $x.m.k . }}{{ tpl .m.k $x }}",
	"leading trim at start": "   {{- .a }}",
	"serializer of a parenthesized value at the close": `{{- toJson (.m) -}}|{{ toJson (.m)}}|{{ toJson (index .l 0 | printf "%d" | printf "%s")}}|{{ quote (.m)
-}}`,
}

// execute runs text as Helm would with stand-ins for Helm's functions.
func execute(t *testing.T, text string, funcs template.FuncMap) (string, error) {
	t.Helper()
	base := template.FuncMap{
		"upper":  strings.ToUpper,
		stepFunc: func(int, int) string { return "" },
		turnFunc: func() string { return "" },
		sizeFunc: func(v any) any { return v },
		"toJson": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"quote": func(v ...any) string { return fmt.Sprintf("%q", fmt.Sprint(v...)) },
		outFunc: func(v any) (string, error) { return printedForm(v) },
		tplFunc: func(s string) string { return instrument("tpl", s) },
	}
	for k, v := range funcs {
		base[k] = v
	}
	var root *template.Template
	base["tpl"] = func(s string, data any) (string, error) {
		c, err := root.Clone()
		if err != nil {
			return "", err
		}
		tt, err := c.New("tpl").Parse(s)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		err = tt.Execute(&b, data)
		return b.String(), err
	}
	root = template.New("x").Option("missingkey=zero").Funcs(base)
	tt, err := root.Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tt.Execute(&b, map[string]any{
		"a": "A", "l": []int{1, 2, 3, 4}, "t": "t={{ range .l }}{{ . }}{{ end }}", "p": new(int), "f": 1.5,
		"m": map[string]any{"k": "v"},
	})
	return b.String(), err
}

// Issue 34, item 2: instrumenting a template leaves its output as it was, white space
// included, and inserts the calls where they are due.
func TestInstrumentKeepsOutput(t *testing.T) {
	for name, text := range instrumentCases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want, err := execute(t, text, nil)
			g.Expect(err).NotTo(HaveOccurred())
			got := instrument("x", text)
			g.Expect(strings.Count(got, "\n")).To(Equal(strings.Count(text, "\n")), "lines kept")
			out, err := execute(t, got, nil)
			g.Expect(err).NotTo(HaveOccurred(), got)
			g.Expect(out).To(Equal(want), "instrumented: %s", got)
		})
	}
}

// The calls are where they are due: each range turn and each template pays a step, each
// printed value its bytes, tpl's text is instrumented.
func TestInstrumentCharges(t *testing.T) {
	g := NewWithT(t)
	var steps, bytes, tpls int
	funcs := template.FuncMap{
		stepFunc: func(s, b int) string { steps += s; bytes += b; return "" },
		turnFunc: func() string { steps++; return "" },
		outFunc:  func(v any) (string, error) { s, err := printedForm(v); bytes += len(s); return s, err },
		tplFunc:  func(s string) string { tpls++; return instrument("tpl", s) },
	}
	out, err := execute(t, instrument("x", "{{ range .l }}ab{{ . }}{{ end }}{{ range 2 }}{{ end }}"), funcs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("ab1ab2ab3ab4"))
	g.Expect(steps).To(Equal(1 + 4 + 2))
	g.Expect(bytes).To(Equal(len(out)))

	steps, bytes = 0, 0
	out, err = execute(t, instrument("x", "{{ tpl .t . }}"), funcs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("t=1234"))
	g.Expect(tpls).To(Equal(1))
	g.Expect(steps).To(Equal(1+1+4), "the file, the tpl text, its 4 turns")

	out, err = execute(t, instrument("x", "{{ $x := . }}{{ tpl $x.m.k . }}{{ tpl .m.k $x }}"), funcs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("vv"))
	g.Expect(tpls).To(Equal(3), "fields and variables with several segments")
}
