package helm

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// renderWith renders a one-template chart with values and returns the error.
func renderWith(t *testing.T, files map[string]string, values map[string]any) error {
	t.Helper()
	root := t.TempDir()
	writeChart(t, filepath.Join(root, "c"), "tenant", files)
	c, err := LoadDir(root, filepath.Join(root, "c"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Values: []map[string]any{values}})
	return err
}

// Issue 34, item 2: loops that call no function (a range over an integer, over a list
// made once, templates that call themselves, the same as text given to tpl) are charged
// a step a turn and stop at the step budget, within the render: nothing is left running
// and no slot is held. Before, nothing charged them: they ran to the render's deadline
// and went on in the background (an abandoned render).
func TestLoopsWithoutFunctionCallsStop(t *testing.T) {
	withLimits(t, Limits{MaxSteps: 200_000})
	loop := "{{ range 1000000000 }}{{ end }}"
	cases := map[string]struct {
		files  map[string]string
		values map[string]any
	}{
		"range over an integer":       {files: map[string]string{"templates/a.yaml": loop}},
		"range over a list made once": {files: map[string]string{"templates/a.yaml": pureLoop(100000)}},
		"a define calling itself twice": {files: map[string]string{
			"templates/_h.tpl": `{{ define "x" }}{{ if lt (len .) 60 }}{{ template "x" (append . 1) }}{{ template "x" (append . 1) }}{{ end }}{{ end }}`,
			"templates/a.yaml": `{{ template "x" list }}`,
		}},
		"include in a loop": {files: map[string]string{
			"templates/_h.tpl": `{{ define "y" }}{{ end }}{{ define "x" }}{{ include "y" . }}{{ end }}`,
			"templates/a.yaml": `{{ range 1000000000 }}{{ include "x" . }}{{ end }}`,
		}},
		"tpl of a value":    {files: map[string]string{"templates/a.yaml": "{{ tpl .Values.t . }}"}, values: map[string]any{"t": loop}},
		"tpl of a pipeline": {files: map[string]string{"templates/a.yaml": `{{ tpl (printf "%s" .Values.t) . }}`}, values: map[string]any{"t": loop}},
		"tpl in tpl": {files: map[string]string{"templates/a.yaml": `{{ tpl .Values.outer . }}`},
			values: map[string]any{"outer": "{{ tpl .Values.t . }}", "t": loop}},
		"a loop in a partial": {files: map[string]string{
			"templates/_h.tpl": `{{ define "x" }}{{ range 1000000000 }}{{ end }}{{ end }}`,
			"templates/a.yaml": `{{ include "x" . }}`,
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// An earlier test's abandoned render may still be ending: this one adds none.
			abandoned := AbandonedRenders()
			err := renderWith(t, tc.files, tc.values)
			g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("loop more than 200000 times"))
			g.Expect(err.Error()).To(MatchRegexp(`\(at tenant/templates/[a-z_]+\.(yaml|tpl):1\)$`))
			g.Expect(err.Error()).NotTo(ContainSubstring("gitsync"), "the instrumentation's calls are not told")
			g.Expect(AbandonedRenders()).To(BeNumerically("<=", abandoned), "nothing goes on in the background")
			// The render's goroutine gives its slot back as it returns, a moment after
			// its caller has the error.
			g.Eventually(RenderSlotsInUse).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(BeZero())
		})
	}
}

// Issue 34, item 2: what templates write is capped, text and printed values alike,
// whatever writes it (a loop over a string made once, static text in a loop, an include
// in a loop), and the process allocates far less than the chart asks for. Before, the
// output was unbounded: only the string functions' bytes were counted.
func TestOutputBombsStop(t *testing.T) {
	withLimits(t, Limits{MaxOutput: 8 << 20})
	kib := strings.Repeat("y", 1024)
	cases := map[string]map[string]string{
		"a string printed in a loop": {"templates/a.yaml": `{{ $s := repeat 1000000 "x" }}{{ range until 1000 }}{{ $s }}{{ end }}`},
		"static text in a loop":      {"templates/a.yaml": "{{ range 100000000 }}" + kib + "{{ end }}"},
		"an include in a loop": {
			"templates/_h.tpl": `{{ define "big" }}` + kib + `{{ end }}`,
			"templates/a.yaml": `{{ range 100000000 }}{{ include "big" . }}{{ end }}`,
		},
		"a value printed in a loop": {"templates/a.yaml": "{{ range 100000000 }}{{ $.Values.v }}{{ end }}"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := renderWith(t, files, map[string]any{"v": kib})
			runtime.ReadMemStats(&after)
			g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("write more than"))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 512<<20), "allocated during the render")
		})
	}
}

// A chart within the budgets renders as before, and a loop within them is fine.
func TestLoopsWithinBudgetRender(t *testing.T) {
	g := NewWithT(t)
	out := renderOne(t, "{{ range $i := 3 }}- {{ $i }}\n{{ end }}{{ tpl .Values.t . }}\n", map[string]any{"t": "{{ range 2 }}x{{ end }}"})
	g.Expect(out).To(Equal("- 0\n- 1\n- 2\nxx\n"))
}

// Issue 34, item 2: a value made of many references to one large string (cheap to
// build: a thousand appends of one megabyte string) is charged at its printed size
// before a serializer or print builds the string, in every spelling (an argument, a
// pipe, printf), and the process allocates far less than the chart asks for. Before,
// toJson built the gigabyte.
func TestSerializedValuesAreCharged(t *testing.T) {
	build := `{{ $s := repeat 1000000 "x" }}{{ $l := list }}{{ range 1000 }}{{ $l = append $l $s }}{{ end }}`
	for _, use := range []string{"{{ $j := toJson $l }}", "{{ $l | toYaml }}", `{{ printf "%v" $l }}`, "{{ $l | toPrettyJson | b64enc }}", "{{ quote $l }}"} {
		t.Run(use, func(t *testing.T) {
			g := NewWithT(t)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := renderWith(t, map[string]string{"templates/a.yaml": build + use}, nil)
			runtime.ReadMemStats(&after)
			g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("bytes of strings"))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 512<<20), "allocated during the render")
		})
	}
}
