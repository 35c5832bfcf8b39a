package helm

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// pureLoop is a template whose loop calls no function: a list made once, ranged over
// n×n times with an empty body. Instrumented (see instrument), each turn pays a step;
// without, nothing can stop it in process (about 50 ns a turn).
func pureLoop(n int) string {
	return "{{ $l := until " + strconv.Itoa(n) + " }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}"
}

// Item 2 of issue 22: a chart looping without function calls fails at its deadline and
// gives its render slot back (its template goes on in the background, counted), so
// another chart renders at once; its retry is refused at once instead of starting the
// same loop again; a second runaway beyond Limits.MaxAbandoned keeps its slot; and the
// count returns to zero when the loops end. Before, the slot stayed taken until the loop
// ended (here ~1 s; with a larger list, for hours).
//
// Since issue 34 templates are instrumented and such a loop stops at the deadline (or its
// step budget); the abandonment stays for what instrumenting cannot reach (one long
// function call), and is tested here with a template left as it is.
func TestAbandonedRenderGivesItsSlotBack(t *testing.T) {
	g := NewWithT(t)
	instrumentOff.Store(true)
	t.Cleanup(func() { instrumentOff.Store(false) })
	withLimits(t, Limits{Concurrent: 1, Timeout: 300 * time.Millisecond, MaxAbandoned: 1})

	// The loops are sized to outlast the deadline about 3 times over and to end within
	// seconds even under the race detector (which slows a template 10-20 times).
	n := 14000 // ~2e8 turns: a few seconds
	if raceDetector {
		n = 4000
	}
	took, err := renderTemplate(t, pureLoop(n))
	g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("longer than 300ms"))
	g.Expect(took).To(BeNumerically("<", 3*time.Second))
	g.Expect(RenderSlotsInUse()).To(Equal(0), "the abandoned render gave its slot back")
	g.Expect(AbandonedRenders()).To(Equal(1))

	root := t.TempDir()
	writeChart(t, root, "ok", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	ok, err := LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = Render(ctx, ok, Options{ReleaseName: "r", Namespace: "n"})
	g.Expect(err).NotTo(HaveOccurred(), "another chart renders while the loop runs")

	took, err = renderTemplate(t, pureLoop(n))
	g.Expect(err).To(MatchError(ContainSubstring("still running after its deadline")))
	g.Expect(took).To(BeNumerically("<", 100*time.Millisecond))

	// The pool is full: a second, different runaway keeps its slot until it ends.
	_, err = renderTemplate(t, pureLoop(n+1)) // another template, as long
	g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
	g.Expect(RenderSlotsInUse()).To(Equal(1))
	g.Expect(AbandonedRenders()).To(Equal(1))

	g.Eventually(func() []int { return []int{RenderSlotsInUse(), AbandonedRenders()} }).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal([]int{0, 0}))
	_, err = Render(context.Background(), ok, Options{ReleaseName: "r", Namespace: "n"})
	g.Expect(err).NotTo(HaveOccurred())
}
