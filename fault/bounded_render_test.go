package fault

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// Issue 34, item 1, against the operator binary: an operator of its own whose render
// workers may use 160 MiB (an idle worker's data segment is about 115 MB), and a chart
// that holds four 60 MB strings at once (one from repeat, within the templates' own
// 64 MiB string budget, three from functions that budget does not charge): the render
// fails alone with RenderLimitExceeded naming the memory bound, the last good revision
// stays, the operator's resident memory stays far below its limit; workers killed from
// outside are replaced, and another tenant's revisions keep being applied throughout. It
// runs alone, before any test starts the shared operator (see suite_test.go).
func TestRenderWorkersTakeTheBombs(t *testing.T) {
	g := NewWithT(t)
	p := ownOperator(t, "bounded-render", "--render-memory-limit=160Mi")
	pid := p.Pid()

	other, otherSHA := newFixture(t, map[string]string{"cm.yaml": plainConfigMap("0")}, time.Second)
	other.waitApplied(otherSHA, time.Minute)
	bomb, bombSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	bomb.waitApplied(bombSHA, time.Minute)

	bombSHA = bomb.repo.Commit("main", "four 60 MB strings held at once", chartFiles(
		`{{ $s := repeat 60000000 "x" }}{{ $u := upper $s }}{{ $t := title $s }}{{ $w := nospace $u }}`+
			"\n"+configMapTemplate("never")))
	cond := bomb.waitNotReady(bombSHA, 2*time.Minute, gitsyncv1.RenderLimitExceededReason)
	g.Expect(cond.Message).To(ContainSubstring("memory limit (160 MiB)"))
	t.Logf("the memory bomb: %s", cond.Message)

	sha := other.repo.Commit("main", "after the bomb", map[string]string{"cm.yaml": plainConfigMap("1")})
	other.waitApplied(sha, 20*time.Second)

	// Workers killed from outside (an OOM killer, a person) are replaced.
	pids := gitsyncproc.RenderWorkers(pid)
	g.Expect(pids).NotTo(BeEmpty(), "the operator renders in worker processes")
	for _, w := range pids {
		g.Expect(syscall.Kill(w, syscall.SIGKILL)).To(Succeed())
	}
	sha = other.repo.Commit("main", "after the workers were killed", map[string]string{"cm.yaml": plainConfigMap("2")})
	other.waitApplied(sha, 20*time.Second)
	g.Expect(gitsyncproc.RenderWorkers(pid)).NotTo(ContainElements(pids))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: bomb.ns, Name: "cm"}, cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("good"), "the last good revision stays")

	exited, err := p.Exited()
	g.Expect(exited).To(BeFalse(), "the operator ended: %v", err)
	peak, err := gitsyncproc.PeakRSS(pid)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("the operator's peak resident memory: %d MiB", peak>>20)
	g.Expect(peak).To(BeNumerically("<", shippedMemoryLimit))
}

func plainConfigMap(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {value: %q}\n", value)
}
