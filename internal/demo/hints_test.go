package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// wantExit is a hint's "# exit N" comment: the exit status the hint promises.
var wantExit = regexp.MustCompile(`#\s*exit (\d+)`)

// hintScript turns the demo's printed hints into one bash script that runs them in order,
// in one shell as a person would, and stops at the first line whose exit status is not
// the one promised (0 unless its comment says "exit N").
func hintScript(out string) (string, int, error) {
	_, hints, ok := strings.Cut(out, "Try, in another shell:\n")
	if !ok {
		return "", 0, fmt.Errorf("no hints in the output")
	}
	hints, _, ok = strings.Cut(hints, "(No kubelet runs here")
	if !ok {
		return "", 0, fmt.Errorf("the hints do not end")
	}
	var script strings.Builder
	script.WriteString("set -o pipefail\n") // a line's pipeline fails when any of its commands does
	n := 0
	for i, line := range strings.Split(hints, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want := 0
		if m := wantExit.FindStringSubmatch(line); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		n++
		fmt.Fprintf(&script, "echo '+ hint %d'\n%s\nrc=$?; if [ $rc -ne %d ]; then echo \"hint line %d exited $rc, want %d\"; exit 1; fi\n", i, line, want, i, want)
	}
	return script.String(), n, nil
}

// Every command line the demo prints works, run in order with the binary the demo ran
// (the hints put it on PATH): each exits as its comment says (0 unless "exit N").
func TestDemoHintsWork(t *testing.T) {
	for _, tool := range []string{"kubectl", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			// The hints use them beside gitsync; `make demo` itself needs none of them.
			t.Skipf("the hints need %s, which this machine does not have", tool)
		}
	}
	g := NewWithT(t)
	bin := gitsyncBinary(t)
	p := startDemo(t, bin, "demo")
	p.waitFor("(No kubelet runs here")
	g.Expect(p.output()).To(ContainSubstring("export PATH=" + filepath.Dir(bin) + ":$PATH"))
	g.Expect(p.output()).NotTo(ContainSubstring("make build"))

	script, n, err := hintScript(p.output())
	g.Expect(err).NotTo(HaveOccurred(), p.output())
	g.Expect(n).To(BeNumerically(">", 20), script)
	g.Expect(script).To(ContainSubstring("gitsync diff app demo")) // the gitsync lines, not only kubectl's
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = t.TempDir()
	// The shell of a person: no gitsync on PATH before the hints put the demo's there,
	// a HOME of its own (kubectl's cache), no global Git configuration.
	path := []string{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "gitsync")); err != nil {
			path = append(path, dir)
		}
	}
	cmd.Env = append(os.Environ(), "PATH="+strings.Join(path, string(filepath.ListSeparator)), "HOME="+t.TempDir(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true", "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s\n--- the demo:\n%s", out, p.output())
	t.Logf("the hints, run:\n%s", out)

	p.signal(syscall.SIGTERM, true)
	g.Expect(p.wait()).To(Succeed(), p.output())
	g.Expect(p.leftovers()).To(BeEmpty(), p.output())
}
