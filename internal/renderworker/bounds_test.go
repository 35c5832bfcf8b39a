package renderworker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// bomb is a tenant's tree built to exhaust one resource of whoever renders it.
type bomb struct {
	name  string
	files map[string]string
	path  string
	// bound is the worker bound it must hit; "" when a check inside the render may stop
	// it first (then any error will do: the render fails alone either way).
	bound string
}

// memoryTemplate holds six 60 MB strings at once (over 400 MB with the worker's own 115);
// cpuTemplate hashes a 6 MB string ten thousand times (minutes of CPU). Neither goes past
// the templates' own string and step budgets: only a worker's bounds stop them.
const (
	memoryTemplate = `{{ $s := repeat 60000000 "x" }}{{ $a := upper $s }}{{ $b := title $s }}{{ $c := nospace $a }}{{ $d := lower $a }}{{ $e := upper $b }}`
	cpuTemplate    = `{{ $s := repeat 6000000 "x" }}{{ range until 10000 }}{{ $_ := sha256sum $s }}{{ end }}`
)

func bombChart(tpl string, values string) map[string]string {
	return map[string]string{
		"chart/Chart.yaml":       "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"chart/values.yaml":      values,
		"chart/templates/x.yaml": tpl,
	}
}

// manyConfigMaps is n ConfigMaps of about size bytes each, as YAML documents.
func manyConfigMaps(n, size int) string {
	var b strings.Builder
	value := strings.Repeat("x", size)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\n%s", configMap(fmt.Sprintf("c%d", i), value))
	}
	return b.String()
}

func bombs() []bomb {
	// kustomize: one resource, patched by many patches that each match every ConfigMap.
	var patches, resources strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&resources, "- c%d.yaml\n", i)
		fmt.Fprintf(&patches, "- target: {kind: ConfigMap}\n  patch: |-\n    - op: add\n      path: /data/p%d\n      value: v\n", i)
	}
	kustomizeCPU := map[string]string{"app/kustomization.yaml": "resources:\n" + resources.String() + "patches:\n" + patches.String()}
	for i := 0; i < 400; i++ {
		kustomizeCPU[fmt.Sprintf("app/c%d.yaml", i)] = configMap(fmt.Sprintf("c%d", i), "v")
	}
	kustomizeOutput := map[string]string{"app/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n"}
	for _, f := range []string{"a", "b", "c"} {
		kustomizeOutput["app/"+f+".yaml"] = strings.ReplaceAll(manyConfigMaps(100, 8192), "name: c", "name: "+f)
	}
	// kustomize: one large file generated into many ConfigMaps.
	var generators strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&generators, "- name: g%d\n  files: [big.txt]\n", i)
	}
	kustomizeMemory := map[string]string{
		"app/kustomization.yaml": "configMapGenerator:\n" + generators.String(),
		"app/big.txt":            strings.Repeat("0123456789abcdef", 4<<16), // 4 MiB
	}
	return []bomb{
		// Within the templates' own budgets (64 MiB of strings from repeat, a million steps),
		// as a tenant who read them would write it: functions the budgets do not charge.
		{name: "helm memory: six 60 MB strings held at once", path: "chart", bound: render.BoundMemory,
			files: bombChart(memoryTemplate+"\n"+configMap("m", "x"), "")},
		{name: "helm CPU: ten thousand hashes of a 6 MB string", path: "chart", bound: render.BoundCPU,
			files: bombChart(cpuTemplate+"\n"+configMap("m", "x"), "")},
		{name: "helm output: thousands of objects", path: "chart", bound: render.BoundOutput,
			files: bombChart(`{{ range .Values.l }}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c{{ . }}
data:
  v: {{ $.Values.big | quote }}
{{ end }}`, "big: "+strings.Repeat("y", 1024)+"\nl:\n"+strings.Repeat("- 1\n", 1)+rangeList(4000))},
		{name: "kustomize CPU: every patch on every object", path: "app", bound: "", files: kustomizeCPU},
		{name: "kustomize output", path: "app", bound: render.BoundOutput, files: kustomizeOutput},
		{name: "kustomize memory: one file generated sixty times", path: "app", bound: "", files: kustomizeMemory},
		{name: "plain YAML output", path: "./", bound: render.BoundOutput, files: map[string]string{"all.yaml": manyConfigMaps(3000, 1024)}},
		{name: "plain YAML memory: an alias bomb in the second document", path: "./", bound: "",
			files: map[string]string{"all.yaml": configMap("first", "ok") + "---\n" + aliasBomb()}},
	}
}

func rangeList(n int) string {
	var b strings.Builder
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "- %d\n", i)
	}
	return b.String()
}

// aliasBomb is a ConfigMap whose data expands to 9⁹ strings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// Each bomb fails its own render — at the worker bound it targets where no check inside
// the render stops it first — while the operator's heap stays as it was, and the pool's
// next render (a replaced worker, when one was stopped) succeeds.
func TestBombsFailTheirRenderAlone(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Bounds: Bounds{Memory: 300 << 20}, Timeout: 30 * time.Second,
		CPU: 2 * time.Second, MaxOutput: 2 << 20})
	good := writeTree(t, map[string]string{"cm.yaml": configMap("fine", "yes")})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, b := range bombs() {
		t.Run(b.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := writeTree(t, b.files)
			_, err := p.Render(context.Background(), app("tenant-a"), render.Source{Root: dir, Path: b.path}, nil)
			g.Expect(err).To(HaveOccurred())
			t.Logf("%s: %v", b.name, err)
			if b.bound != "" {
				var limit *render.LimitError
				g.Expect(err).To(BeAssignableToTypeOf(limit), "%v", err)
				g.Expect(err.(*render.LimitError).Bound).To(Equal(b.bound))
			}
			res, err := p.Render(context.Background(), app("tenant-b"), render.Source{Root: good, Path: "./"}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(1))
		})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("the parent's heap grew by %d MiB while its workers rendered the bombs", grown>>20)
	}
}

// A worker killed from outside (the OOM killer, a person) fails the render it ran and is
// replaced.
func TestKilledWorkerIsReplaced(t *testing.T) {
	g := NewWithT(t)
	p := newPool(t, Options{Workers: 1, Timeout: 30 * time.Second})
	loop := writeTree(t, loopChart())
	good := writeTree(t, map[string]string{"cm.yaml": configMap("fine", "yes")})
	done := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), app("a"), render.Source{Root: loop, Path: "./"}, nil)
		done <- err
	}()
	time.Sleep(time.Second) // the loop runs
	pids := gitsyncproc.RenderWorkers(os.Getpid())
	g.Expect(pids).To(HaveLen(1))
	g.Expect(syscall.Kill(pids[0], syscall.SIGKILL)).To(Succeed())
	err := <-done
	g.Expect(err).To(MatchError(ContainSubstring("render worker was killed")))
	g.Expect(render.IsLimit(err)).To(BeFalse())
	res, err := p.Render(context.Background(), app("a"), render.Source{Root: good, Path: "./"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(1))
}

// A worker has a network namespace of its own (only loopback: a render reaches no
// address) where the kernel allows one; with NoNetworkNamespace it shares the operator's.
func TestWorkersHaveANetworkNamespaceOfTheirOwn(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skip("no /proc/self/ns/net")
	}
	good := writeTree(t, map[string]string{"cm.yaml": configMap("fine", "yes")})
	for _, shared := range []bool{false, true} {
		p := newPool(t, Options{Workers: 1, NoNetworkNamespace: shared})
		if _, err := p.Render(context.Background(), app("a"), render.Source{Root: good, Path: "./"}, nil); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		isolated := p.isolate
		p.mu.Unlock()
		pids := gitsyncproc.RenderWorkers(os.Getpid())
		if len(pids) != 1 {
			t.Fatalf("%d workers", len(pids))
		}
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case shared && ns != own:
			t.Errorf("NoNetworkNamespace: the worker's network namespace is %s, the operator's %s", ns, own)
		case !shared && isolated && ns == own:
			t.Errorf("the worker shares the operator's network namespace %s", ns)
		case !shared && !isolated:
			t.Logf("the kernel refused a network namespace here: workers share the operator's")
		}
		p.Close()
	}
}
