package helm

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// helpersTpl are the defines the cases of TestInstrumentedChartRendersAsHelm include:
// gitsync's own chart's gitsync.configFile shape (trimmed actions, a variable, fromYaml,
// toJson of a parenthesized pipeline) and a plain YAML one.
const helpersTpl = `{{- define "cfg" -}}
{{- $d := .Values.doc -}}
{{- toJson ($d | fromYaml) -}}
{{- end }}
{{- define "cfgUntrimmed" }}{{ $d := .Values.doc }}{{ toJson ($d | fromYaml)}}{{ end }}
{{- define "yaml" -}}
a: 1
b: [x, y]
{{- end }}
`

// Values or pipelines given to a serializer or print keep their type when instrumented:
// gitsyncSize passes them through, and nothing prints them on the way.
var helmShapes = map[string]string{
	"gitsync.configFile":          `{{- $r := include "cfg" . | fromJson }}name: {{ $r.a }}` + "\n" + `raw: {{ include "cfg" . }}`,
	"define untrimmed":            `{{ include "cfgUntrimmed" . }}`,
	"trimmed paren pipeline":      `{{- $d := .Values.doc -}} x: {{- toJson ($d | fromYaml) -}} .`,
	"paren pipeline at the close": `{{ $d := .Values.doc }}{{ toJson ($d | fromYaml)}}|{{ toYaml ($d | fromYaml)}}`,
	"trim marker after newline":   "{{ toJson (list 1 2)\n-}}\n.",
	"variable piped to toYaml":    `{{- $x := dict "a" 1 "b" (list 2 3) -}}{{- $x | toYaml -}}|{{ $x | toYaml}}`,
	"toJson of a list":            `{{ toJson (list 1 2) }}|{{ toJson (list 1 2)}}|{{- toJson (list 1 2) -}}|{{ toJson ( list 1 2 ) }}`,
	"include through fromYaml":    `{{ include "yaml" . | fromYaml | toJson }}|{{- include "yaml" . | fromYaml | toJson -}}|{{ toJson (include "yaml" . | fromYaml)}}`,
	"nested parentheses":          `{{- toJson (dict "a" (fromYaml (toYaml (list 1 2 | dict "l")))) -}}|{{ toJson ((list 1 2))}}|{{ printf "%s" (toJson (fromYaml (toYaml (dict "a" 1))))}}`,
	"printf of a dict":            `{{ printf "%v" (dict "a" 1) }}|{{- printf "%v" (dict "a" 1) -}}|{{ printf "%v" (dict "a" 1)}}|{{ printf "%T" (dict "a" 1)}}`,
	"quote and print":             `{{ quote (list 1 2)}}|{{- print (dict "a" 1) -}}|{{ cat (list 1) (dict "b" 2)}}|{{ squote (.Values.m)}}`,
	"fields in parentheses":       `{{- toPrettyJson ( .Values.m ) -}}|{{ toYaml (.Values.m)}}|{{ .Values.m | toJson}}|{{ toJson .Values.m}}`,
	"in range and with":           `{{ range $k, $v := .Values.m }}{{- toJson (dict $k $v) -}}{{ end }}{{ with .Values.m }}{{- toJson (. | toYaml | fromYaml) -}}{{ end }}`,
	"tpl in parentheses":          `{{- tpl (.Values.t) . -}}|{{ tpl (toYaml .Values.t) .}}|{{- tpl (print .Values.t) . -}}`,
	"kube version printed":        `{{ .Capabilities.KubeVersion }}|{{ $kv := .Capabilities.KubeVersion }}{{ $kv }}|{{ print .Capabilities.KubeVersion }}|{{ printf "%v" .Capabilities.KubeVersion }}|{{ .Capabilities.KubeVersion | toString }}|{{ .Capabilities.HelmVersion }}|{{ .Capabilities.APIVersions | len }}|{{ .Chart.Name }}|{{ .Release }}|{{ .Capabilities.KubeVersion | quote }}`,
	"typeOf through sizes":        `{{ typeOf (fromYaml "a: 1") }}|{{ kindOf (toJson (list 1)) }}|{{ toString (list 1 2)}}`,
}

// renderShape renders a chart of helpersTpl and tpl, instrumented or not.
func renderShape(t *testing.T, tpl string, instrumented bool) (string, error) {
	t.Helper()
	instrumentOff.Store(!instrumented)
	defer func() { instrumentOff.Store(false) }()
	root := t.TempDir()
	writeChart(t, filepath.Join(root, "c"), "shapes", map[string]string{
		"templates/_helpers.tpl": helpersTpl,
		"templates/main.yaml":    tpl,
	})
	c, err := LoadDir(root, filepath.Join(root, "c"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"doc": "a: 1\nb: [x, y]\n", "m": map[string]any{"k": "v", "n": 2}, "t": "{{ range 2 }}t{{ end }}"}
	r, err := Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Values: []map[string]any{values}})
	if err != nil {
		return "", err
	}
	out := ""
	for _, m := range r.Templates {
		out += m.Name + ":\n" + string(m.Data)
	}
	return out, nil
}

// Issue 34, item 2: a chart renders byte for byte as Helm renders it without the
// instrumentation, for every shape of a value handed to a serializer or print (a
// parenthesized pipeline, a pipe, nested parentheses, trimmed actions, in a define).
// Before, `{{- toJson ($d | fromYaml) -}}` became `toJson (gitsyncSize ($d | fromYaml)
// | gitsyncOut)`: the map was printed before toJson saw it ("map[a:1]"), and gitsync's
// own chart did not render.
func TestInstrumentedChartRendersAsHelm(t *testing.T) {
	for name, tpl := range helmShapes {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want, err := renderShape(t, tpl, false)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := renderShape(t, tpl, true)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want), "instrumented:\n%s\nwithout:\n%s", got, want)
		})
	}
}
