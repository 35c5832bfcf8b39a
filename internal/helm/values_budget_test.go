package helm

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// valuesBomb is values whose aliases expand to 9^7 (4.8 million) values.
func valuesBomb() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// A values file with an alias bomb, in its first document or past it, is refused by the
// YAML budget naming the file, before any of it is expanded; sane values still parse.
func TestParseValuesBudget(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"document 1": {valuesBomb(), "values values-prod.yaml: document 1 expands to more than"},
		// Few aliases of a long list: under yaml.v2's ratio of aliases to values, which
		// would expand it all.
		"document 1, few aliases": {"a: &a [" + strings.Repeat("x, ", 1999) + "x]\nb: [" + strings.Repeat("*a, ", 799) + "*a]\n",
			"values values-prod.yaml: document 1 expands to more than"},
		"document 2": {"replicaCount: 2\n---\n" + valuesBomb(), "values values-prod.yaml: document 2 expands to more than"},
		"document 3": {"a: 1\n---\nb: 2\n---\n" + valuesBomb(), "values values-prod.yaml: document 3 expands to more than"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var err error
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = ParseValues("values-prod.yaml", []byte(tc.data))
			runtime.ReadMemStats(&after)
			g.Expect(err).To(MatchError(yamlbudget.ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 64<<20), "bytes allocated")
		})
	}
	g := NewWithT(t)
	v, err := ParseValues("values.yaml", []byte("image: &img {repo: x, tag: \"1\"}\nsidecar: *img\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(HaveKeyWithValue("sidecar", map[string]any{"repo": "x", "tag": "1"}))
}
