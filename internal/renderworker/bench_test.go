package renderworker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
)

// benchChart is a chart of 20 ConfigMaps, the size of the scale benchmarks' Applications.
func benchChart(b *testing.B) render.Source {
	var tpl strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&tpl, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n  v: {{ .Values.v | quote }}\n", i)
	}
	dir := b.TempDir()
	for name, data := range map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: bench\nversion: 0.1.0\n", "values.yaml": "v: x\n", "templates/cms.yaml": tpl.String(),
	} {
		_ = os.MkdirAll(dir+"/templates", 0o755)
		if err := os.WriteFile(dir+"/"+name, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return render.Source{Root: dir, Path: "./"}
}

// BenchmarkRender is what a render costs in the operator's process and in a warm worker
// (in-process figures of the parent's side: the worker is a real child process).
func BenchmarkRender(b *testing.B) {
	src := benchChart(b)
	a := app("bench")
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := render.Render(context.Background(), a, src, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("worker", func(b *testing.B) {
		p, err := New(Options{Binary: gitsyncBin, Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Render(context.Background(), a, src, nil); err != nil { // warm
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := p.Render(context.Background(), a, src, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMeasureChartInWorker renders the chart at $GITSYNC_MEASURE_CHART (a directory, its
// dependencies vendored; e.g. kube-prometheus-stack) in a worker and logs the worker's
// peak resident memory and data segment: what --render-memory-limit must leave room for.
func TestMeasureChartInWorker(t *testing.T) {
	dir := os.Getenv("GITSYNC_MEASURE_CHART")
	if dir == "" {
		t.Skip("GITSYNC_MEASURE_CHART names no chart directory")
	}
	p := newPool(t, Options{Workers: 1})
	res, err := p.Render(context.Background(), app("measure"), render.Source{Root: dir, Path: "./"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pids := gitsyncproc.RenderWorkers(os.Getpid())
	if len(pids) != 1 {
		t.Fatalf("%d workers", len(pids))
	}
	status := procStatus(t, pids[0])
	t.Logf("%s: %d objects; worker VmHWM %s, VmData %s, VmPeak %s", dir, len(res.Objects), status["VmHWM"], status["VmData"], status["VmPeak"])
}

func procStatus(t *testing.T, pid int) map[string]string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
