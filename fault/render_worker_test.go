package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Issue 34, item 1, against the operator binary: a chart that allocates without end (a
// string doubled in a loop: no output, no function the in-process template limits
// charge) fails its own Application with RenderLimitExceeded naming the memory bound,
// in a render worker; the operator's own resident memory stays far below its limit; its
// workers, killed from outside, are replaced, and another tenant's revisions keep being
// applied throughout; the operator is never restarted.
func TestRenderWorkersTakeTheBombs(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	sharedMu.Lock()
	restarts := sharedRestarts
	sharedMu.Unlock()

	other, otherSHA := newFixture(t, map[string]string{"cm.yaml": plainConfigMap("0")}, time.Second)
	other.waitApplied(otherSHA, time.Minute)
	bomb, bombSHA := newFixture(t, chartFiles(configMapTemplate("good")), time.Second)
	bomb.waitApplied(bombSHA, time.Minute)

	bombSHA = bomb.repo.Commit("main", "a string doubled forty times", chartFiles(
		`{{ $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}`+configMapTemplate("never")))
	cond := bomb.waitNotReady(bombSHA, 2*time.Minute, gitsyncv1.RenderLimitExceededReason)
	g.Expect(cond.Message).To(ContainSubstring("memory limit"))
	t.Logf("the memory bomb: %s", cond.Message)

	sha := other.repo.Commit("main", "after the bomb", map[string]string{"cm.yaml": plainConfigMap("1")})
	other.waitApplied(sha, 20*time.Second)

	// Workers killed from outside (an OOM killer, a person) are replaced.
	pids := renderWorkers(sharedPid())
	g.Expect(pids).NotTo(BeEmpty(), "the operator renders in worker processes")
	for _, pid := range pids {
		g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	}
	sha = other.repo.Commit("main", "after the workers were killed", map[string]string{"cm.yaml": plainConfigMap("2")})
	other.waitApplied(sha, 20*time.Second)
	g.Expect(renderWorkers(sharedPid())).NotTo(ContainElements(pids))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: bomb.ns, Name: "cm"}, cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("good"), "the last good revision stays")

	sharedMu.Lock()
	g.Expect(sharedRestarts).To(Equal(restarts), "the operator was not restarted")
	sharedMu.Unlock()
	peak, err := peakRSS(sharedPid())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("the operator's peak resident memory: %d MiB", peak>>20)
	g.Expect(peak).To(BeNumerically("<", shippedMemoryLimit))
}

func plainConfigMap(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {value: %q}\n", value)
}

// renderWorkers are the render worker processes of the operator pid.
func renderWorkers(parent int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline")); strings.Contains(string(cmd), "render-worker") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}
