package fault

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// shippedMemoryLimit is the operator's own share of the manager's memory limit in
// config/manager (1536Mi: 512 MiB for the operator, the rest for its two render workers).
const shippedMemoryLimit = 512 << 20

// chartFiles is a chart at the repository's root whose one template is tpl.
func chartFiles(tpl string) map[string]string {
	return map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: tenant\nversion: 0.1.0\n",
		"templates/main.yaml": tpl,
	}
}

func configMapTemplate(value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {value: \"" + value + "\"}\n"
}

// Issue 22, item 2, against the operator binary (the shared one, capped like a pod): a
// chart whose template loops without calling a function (40,000² empty turns, longer
// more than the templates' step budget allows) and a chart that builds strings without end
// (`repeat` in a loop) each fail their own Application with a render limit; another
// tenant's chart Application keeps syncing meanwhile; the operator is never restarted
// and its peak resident memory stays under the shipped 512 MiB limit.
func TestTenantChartsCannotTakeTheOperatorDown(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	sharedMu.Lock()
	restarts := sharedRestarts
	sharedMu.Unlock()

	other, otherSHA := newFixture(t, chartFiles(configMapTemplate("0")), time.Second)
	other.waitApplied(otherSHA, time.Minute)
	loop, loopSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	loop.waitApplied(loopSHA, time.Minute)
	bomb, bombSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	bomb.waitApplied(bombSHA, time.Minute)

	start := time.Now()
	loopSHA = loop.repo.Commit("main", "a loop without function calls", chartFiles(
		"{{ $l := until 40000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}"+configMapTemplate("never")))
	bombSHA = bomb.repo.Commit("main", "strings without end", chartFiles(
		`{{ range until 100000 }}{{ $s := repeat 1000000 "x" }}{{ $s }}{{ end }}`))

	cond := bomb.waitNotReady(bombSHA, time.Minute, gitsyncv1.BuildFailedReason)
	g.Expect(cond.Message).To(ContainSubstring("bytes of strings"))
	t.Logf("the memory bomb failed after %v: %s", time.Since(start).Round(100*time.Millisecond), cond.Message)

	// While the loop runs, the other tenant's new revisions are applied.
	for i := 1; i <= 3; i++ {
		sha := other.repo.Commit("main", fmt.Sprint("revision ", i), chartFiles(configMapTemplate(fmt.Sprint(i))))
		begin := time.Now()
		other.waitApplied(sha, 20*time.Second)
		t.Logf("the other tenant's revision %d applied in %v", i, time.Since(begin).Round(100*time.Millisecond))
	}

	// The templates' step budget stops it inside its worker (BuildFailed); were it to
	// get past that, the worker's deadline or CPU time would (RenderLimitExceeded).
	cond = loop.waitNotReady(loopSHA, 2*time.Minute, gitsyncv1.BuildFailedReason, gitsyncv1.RenderLimitExceededReason)
	g.Expect(cond.Message).To(MatchRegexp("loop more than|exceeded its (timeout|cpu) limit"))
	t.Logf("the loop failed after %v: %s", time.Since(start).Round(100*time.Millisecond), cond.Message)
	sha := other.repo.Commit("main", "after the loop's deadline", chartFiles(configMapTemplate("after")))
	other.waitApplied(sha, 20*time.Second)

	// The last good objects of the failing tenants stay as they were.
	for _, f := range []*fixture{loop, bomb} {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "cm"}, cm)).To(Succeed())
		g.Expect(cm.Data["value"]).To(Equal("good"))
	}

	sharedMu.Lock()
	g.Expect(sharedRestarts).To(Equal(restarts), "the operator was not restarted")
	sharedMu.Unlock()
	peak, err := gitsyncproc.PeakRSS(sharedPid())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("the operator's peak resident memory: %d MiB", peak>>20)
	g.Expect(peak).To(BeNumerically("<", shippedMemoryLimit))
}
