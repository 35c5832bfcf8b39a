package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
	. "github.com/onsi/gomega"
)

// writeChart writes a chart named name with files (relative to the chart) under dir.
func writeChart(t *testing.T, dir, name string, files map[string]string) {
	t.Helper()
	all := map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n"}
	for k, v := range files {
		all[k] = v
	}
	for rel, data := range all {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// withLimits sets the render limits for one test.
func withLimits(t *testing.T, l Limits) {
	SetLimits(l)
	t.Cleanup(func() { SetLimits(Limits{}) })
}

// Item 4 of issue 22: a chart path that is (or goes through) a symlink to a directory
// outside the checkout is refused; a symlink that stays inside the checkout is followed.
func TestLoadDirRefusesSymlinkOutOfCheckout(t *testing.T) {
	g := NewWithT(t)
	base := t.TempDir()
	root, other := filepath.Join(base, "checkout"), filepath.Join(base, "storage", "tenant-a")
	writeChart(t, filepath.Join(other, "chart"), "secret-chart", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	writeChart(t, filepath.Join(root, "real"), "mine", nil)
	g.Expect(os.Symlink(filepath.Join(other, "chart"), filepath.Join(root, "x"))).To(Succeed())
	g.Expect(os.Symlink(other, filepath.Join(root, "link"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "inside"))).To(Succeed())

	for _, dir := range []string{"x", "link/chart"} {
		_, err := LoadDir(root, filepath.Join(root, dir))
		g.Expect(err).To(MatchError(ContainSubstring("outside the checkout")), dir)
	}
	c, err := LoadDir(root, filepath.Join(root, "inside"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Name()).To(Equal("mine"))
}

const secretSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "auth": {"type": "object", "properties": {"password": {"type": "string", "pattern": "^[a-z]+$"}}},
    "replicas": {"type": "integer"}
  },
  "required": ["replicas"]
}`

// Item 5: a schema error names the path and the constraint, never the value.
func TestSchemaErrorHidesValues(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeChart(t, root, "app", map[string]string{"values.schema.json": secretSchema, "templates/cm.yaml": "kind: ConfigMap\n"})
	c, err := LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n",
		Values: []map[string]any{{"auth": map[string]any{"password": "S3cr3t!"}}}})
	g.Expect(errors.Is(err, ErrSchema)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("/auth/password: pattern"))
	g.Expect(err.Error()).To(ContainSubstring("required (replicas)"))
	g.Expect(err.Error()).NotTo(ContainSubstring("S3cr3t"))

	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n",
		Values: []map[string]any{{"replicas": 2, "auth": map[string]any{"password": "fine"}}}})
	g.Expect(err).NotTo(HaveOccurred())
}

// Item 2: a schema's $ref to http(s) or file is refused, not fetched.
func TestSchemaExternalRefRefused(t *testing.T) {
	g := NewWithT(t)
	ln := receiver.Listen(t)
	for _, ref := range []string{"http://" + ln.Addr().String() + "/s.json", "file:///etc/passwd"} {
		root := t.TempDir()
		writeChart(t, root, "app", map[string]string{
			"values.schema.json": `{"type": "object", "properties": {"a": {"$ref": "` + ref + `"}}}`,
			"templates/cm.yaml":  "kind: ConfigMap\n",
		})
		c, err := LoadDir(root, root)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n", Values: []map[string]any{{"a": 1}}})
		g.Expect(err).To(MatchError(ContainSubstring("refused")), ref)
	}
	time.Sleep(50 * time.Millisecond)
	g.Expect(ln.Accepted()).To(BeZero())
}

func TestRedactSecrets(t *testing.T) {
	g := NewWithT(t)
	base := errors.New(`values: "S3cr3t!" and line-two-of-key in template`)
	err := RedactSecrets(base, "S3cr3t!", "line-one-of-key\nline-two-of-key", "ab")
	g.Expect(err.Error()).To(Equal(`values: "*****" and ***** in template`))
	g.Expect(errors.Is(err, base)).To(BeTrue())
	g.Expect(RedactSecrets(base, "absent")).To(BeIdenticalTo(base))
}

func renderTemplate(t *testing.T, tpl string) (time.Duration, error) {
	t.Helper()
	root := t.TempDir()
	writeChart(t, root, "bad", map[string]string{"templates/bad.yaml": tpl})
	c, err := LoadDir(root, root)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n"})
	return time.Since(start), err
}

// Item 2: nested `range until` loops stop at the element budget at once, and at the
// render's deadline when the budget is large enough to let them run.
func TestLoopingChartStops(t *testing.T) {
	g := NewWithT(t)
	loop := "{{ range until 100000 }}{{ range until 100000 }}{{ $x := 1 }}{{ end }}{{ end }}"
	took, err := renderTemplate(t, loop)
	g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("list elements"))
	// The budget stopped it, not the deadline (each turn also pays a step since issue
	// 34: seconds under the race detector).
	g.Expect(took).To(BeNumerically("<", DefaultRenderTimeout))

	withLimits(t, Limits{Timeout: time.Second, MaxOps: 1 << 60, MaxSteps: 1 << 60})
	took, err = renderTemplate(t, loop)
	g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("longer than 1s"))
	g.Expect(took).To(BeNumerically("<", 3*time.Second))
}

// Item 2: `repeat` in a loop stops at the string budget; the process's allocations stay
// far below what the chart asks for (100,000 × 1 MB).
func TestMemoryBombChartStops(t *testing.T) {
	g := NewWithT(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := renderTemplate(t, `{{ range until 100000 }}{{ $s := repeat 1000000 "x" }}{{ $s }}{{ end }}`)
	runtime.ReadMemStats(&after)
	g.Expect(errors.Is(err, ErrRenderLimit)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("bytes of strings"))
	g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 1<<30), "allocated during the render")
	g.Expect(after.HeapInuse).To(BeNumerically("<", 512<<20))
}

// Item 2: renders wait for one of Limits.Concurrent slots.
func TestRenderSlots(t *testing.T) {
	g := NewWithT(t)
	withLimits(t, Limits{Concurrent: 1, Timeout: 2 * time.Second, MaxOps: 1 << 60, MaxSteps: 1 << 60})
	busy := make(chan error, 1)
	go func() {
		_, err := renderTemplate(t, "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}")
		busy <- err
	}()
	time.Sleep(200 * time.Millisecond)
	root := t.TempDir()
	writeChart(t, root, "ok", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	c, err := LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Render(ctx, c, Options{ReleaseName: "r", Namespace: "n"})
	g.Expect(err).To(MatchError(ContainSubstring("waiting for a render slot")))
	g.Expect(<-busy).To(MatchError(ErrRenderLimit))
	_, err = Render(context.Background(), c, Options{ReleaseName: "r", Namespace: "n"})
	g.Expect(err).NotTo(HaveOccurred())
}

// subchartArchive is a .tgz of a chart whose files decompress to size bytes of zeros.
func subchartArchive(t *testing.T, name string, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(n string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("Chart.yaml", []byte("apiVersion: v2\nname: "+name+"\nversion: 1.0.0\n"))
	for i := 0; size > 0; i++ {
		n := min(size, 4<<20)
		add("files/zeros-"+string(rune('a'+i)), make([]byte, n))
		size -= n
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Item 2: vendored subcharts are counted together: two that each fit refuse the chart.
func TestVendoredSubchartsCountedTogether(t *testing.T) {
	g := NewWithT(t)
	withLimits(t, Limits{MaxDecompressed: 8 << 20}) // the default is 50 MiB; the same, smaller
	root := t.TempDir()
	a, b := subchartArchive(t, "a", 5<<20), subchartArchive(t, "b", 5<<20)
	g.Expect(len(a)+len(b)).To(BeNumerically("<", 1<<20), "small on disk")
	writeChart(t, root, "app", map[string]string{"charts/a-1.0.0.tgz": string(a), "charts/b-1.0.0.tgz": string(b)})
	_, err := LoadDir(root, root)
	g.Expect(errors.Is(err, ErrChartTooLarge)).To(BeTrue(), "%v", err)

	// One of them alone fits.
	g.Expect(os.Remove(filepath.Join(root, "charts", "b-1.0.0.tgz"))).To(Succeed())
	_, err = LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
}
