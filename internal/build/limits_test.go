package build

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// aliasBomb is the held-out fault run's bomb: 14 lines whose aliases expand to 9^7
// (4.8 million) values.
func aliasBomb(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
	b.WriteString("  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("  x: done\n")
	return b.String()
}

// allocated returns the bytes f allocated (the whole process's, so tests calling it do
// not run in parallel).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Every YAML file kustomize reads is checked before kustomize parses (and expands) it,
// whatever its name: kustomize parses any resource or patch file as YAML.
func TestBuildKustomizeRefusesAliasBomb(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata: {a: b}\n"
	tests := []struct {
		name  string
		files map[string]string
		file  string // the file the error must name
	}{
		{
			name:  "resource",
			files: map[string]string{"app/kustomization.yaml": "resources: [bomb.yaml]\n", "app/bomb.yaml": aliasBomb("bomb")},
			file:  "app/bomb.yaml",
		},
		{
			name:  "resource with another extension",
			files: map[string]string{"app/kustomization.yaml": "resources: [bomb.txt]\n", "app/bomb.txt": aliasBomb("bomb")},
			file:  "app/bomb.txt",
		},
		{
			name: "patch file",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: patch.yaml\n",
				"app/cm.yaml":            cm,
				"app/patch.yaml":         aliasBomb("bomb"),
			},
			file: "app/patch.yaml",
		},
		{
			name: "strategic merge patch in a base",
			files: map[string]string{
				"app/kustomization.yaml":  "resources: [../base]\n",
				"base/kustomization.yaml": "resources: [cm.yaml]\npatchesStrategicMerge: [patch.yaml]\n",
				"base/cm.yaml":            cm,
				"base/patch.yaml":         aliasBomb("bomb"),
			},
			file: "base/patch.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			var err error
			alloc := allocated(func() { _, err = Build(root, "app") })
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.file + ": document 1 expands to more than 1048576 values through YAML aliases"))
			// Expanded, the bomb is gigabytes; refused, it is the cost of reading 14 lines
			// (and kustomize's set-up).
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "bytes allocated by the build")
		})
	}
}

// Aliases that expand to a sane size still build (kustomize expands them).
func TestBuildKustomizeAllowsSmallAliases(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: &l {a: b}}\ndata: {greeting: &g hi, again: *g}\n",
	})
	objs, err := Build(root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].Object["data"]).To(Equal(map[string]any{"greeting": "hi", "again": "hi"}))
}

func TestExpansionSize(t *testing.T) {
	g := NewWithT(t)
	g.Expect(newBudget(maxRenderValues).checkYAML("f", []byte(laughs()))).To(MatchError(ErrTooLarge))
	g.Expect(newBudget(maxRenderValues).checkYAML("f", []byte("a: &a [*a]\n"))).To(MatchError(ErrTooLarge), "an alias to its own ancestor")
	g.Expect(newBudget(maxRenderValues).checkYAML("f", []byte("a: &a [x, y]\nb: [*a, *a]\n---\nc: d\n"))).To(Succeed())
	g.Expect(newBudget(maxRenderValues).checkYAML("f", []byte("not: [yaml\n"))).To(Succeed(), "not YAML: for its reader to report")
	g.Expect(newBudget(maxRenderValues).checkYAML("f", []byte("key=value\nother=1\n"))).To(Succeed())
}

// sparse creates a file of size bytes (below dir) that takes no disk space.
func sparse(t *testing.T, dir, name string, size int64) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// A file over MaxFileSize, or files over MaxRenderSize together, are refused before
// they are read (so before they are parsed, on every retry).
func TestBuildRefusesLargeFiles(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	tests := []struct {
		name   string
		files  map[string]string
		sparse map[string]int64
		want   string
	}{
		{
			name:   "plain file",
			files:  map[string]string{"app/a.yaml": cm},
			sparse: map[string]int64{"app/big.yaml": 50 << 20},
			want:   "app/big.yaml is 50 MiB, over the 8 MiB limit for one file",
		},
		{
			name:   "plain render",
			files:  map[string]string{"app/a.yaml": cm},
			sparse: map[string]int64{"app/b1.yaml": 7 << 20, "app/b2.yaml": 7 << 20, "app/b3.yaml": 7 << 20, "app/b4.yaml": 7 << 20, "app/b5.yaml": 7 << 20},
			want:   "app/b5.yaml: the files read so far and this one are 35.0 MiB, over the 32 MiB limit for one build",
		},
		{
			name:   "kustomize resource",
			files:  map[string]string{"app/kustomization.yaml": "resources: [a.yaml, big.yaml]\n", "app/a.yaml": cm},
			sparse: map[string]int64{"app/big.yaml": 50 << 20},
			want:   "app/big.yaml is 50 MiB, over the 8 MiB limit for one file",
		},
		{
			name:   "kustomize generator file",
			files:  map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: big\n  files: [big.bin]\n"},
			sparse: map[string]int64{"app/big.bin": 9 << 20},
			want:   "app/big.bin is 9 MiB, over the 8 MiB limit for one file",
		},
		{
			// Generator files are data, which kustomize does not parse: only the budget stops them.
			name:   "kustomize render",
			files:  map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: big\n  files: [b1.bin, b2.bin, b3.bin, b4.bin, b5.bin]\n"},
			sparse: map[string]int64{"app/b1.bin": 7 << 20, "app/b2.bin": 7 << 20, "app/b3.bin": 7 << 20, "app/b4.bin": 7 << 20, "app/b5.bin": 7 << 20},
			want:   "app/b5.bin: the files read so far and this one are 35.0 MiB, over the 32 MiB limit for one build",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			for name, size := range tt.sparse {
				sparse(t, root, name, size)
			}
			var err error
			alloc := allocated(func() { _, err = Build(root, "app") })
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			if !strings.HasSuffix(tt.name, "render") {
				g.Expect(alloc).To(BeNumerically("<", 16<<20), "bytes allocated: the large file is not read")
			}
		})
	}
}

// Files up to the limits build.
func TestBuildAllowsFilesUpToTheLimit(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  big: \"" + strings.Repeat("x", MaxFileSize-100) + "\"\n"
	writeFiles(t, root, map[string]string{"app/cm.yaml": cm, "kust/kustomization.yaml": "resources: [../app/cm.yaml]\n"})
	objs, err := Build(root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	objs, err = Build(root, "kust")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
}

func TestBudget(t *testing.T) {
	g := NewWithT(t)
	b := newBudget(maxRenderValues)
	g.Expect(b.admit("a", MaxFileSize)).To(Succeed())
	g.Expect(b.admit("a", MaxFileSize)).To(Succeed(), "a file read twice counts once")
	g.Expect(b.admit("b", MaxFileSize+1)).To(MatchError(ContainSubstring("b is 8.0 MiB, over the 8 MiB limit for one file")))
	for _, f := range []string{"c", "d", "e"} {
		g.Expect(b.admit(f, MaxFileSize)).To(Succeed())
	}
	g.Expect(b.admit("f", 1)).To(MatchError(ErrTooLarge))
	g.Expect(mib(1500)).To(Equal("2 KiB"))
}

// flowOnes is YAML's densest form: n values in size 2n.
func flowOnes(n int) string {
	return "[" + strings.Repeat("1,", n-1) + "1]\n"
}

// Memory follows values, not bytes: a file dense enough to hold more values than one
// file may is refused before it is parsed, and a render whose documents together hold
// too many is refused as it reaches the limit.
func TestBuildRefusesTooManyValues(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "plain: one dense file",
			files: map[string]string{"app/dense.yaml": flowOnes(600_000)},
			want:  "app/dense.yaml: the file may hold up to 1200002 YAML values, over the 1048576 that one file may hold",
		},
		{
			name:  "kustomize: one dense file",
			files: map[string]string{"app/kustomization.yaml": "resources: [dense.yaml]\n", "app/dense.yaml": flowOnes(600_000)},
			want:  "app/dense.yaml: the file may hold up to 1200002 YAML values",
		},
		{
			name: "plain: many objects",
			files: map[string]string{
				"app/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: " + flowOnes(500_000),
				"app/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: " + flowOnes(500_000),
				"app/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: " + flowOnes(50_000),
			},
			want: "app/c.yaml: the documents parsed so far hold more than 1048576 values, over the limit for one build",
		},
		{
			name: "kustomize: many objects",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
				"app/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: " + flowOnes(100),
				"app/b.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: " + flowOnes(270_000),
			},
			want: "app/b.yaml: the documents parsed so far hold more than 262144 values",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := Build(root, "app")
			g.Expect(err).To(MatchError(ErrTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// diamonds writes n levels of two overlays (prefixes x- and y-) of the next level, the
// last holding one ConfigMap: kustomize builds it 2^n times.
func diamonds(t *testing.T, root string, n int) {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("l%d/kustomization.yaml", i)] = fmt.Sprintf("resources: [../x%d, ../y%d]\n", i, i)
		files[fmt.Sprintf("x%d/kustomization.yaml", i)] = fmt.Sprintf("namePrefix: x-\nresources: [../l%d]\n", i+1)
		files[fmt.Sprintf("y%d/kustomization.yaml", i)] = fmt.Sprintf("namePrefix: y-\nresources: [../l%d]\n", i+1)
	}
	files[fmt.Sprintf("l%d/kustomization.yaml", n)] = "resources: [cm.yaml]\n"
	files[fmt.Sprintf("l%d/cm.yaml", n)] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	writeFiles(t, root, files)
}

// A few lines of kustomizations that reach one base through many paths would keep
// kustomize busy for hours (and every other build waiting for it): refused before
// kustomize runs. Bases shared a few times still build.
func TestBuildKustomizeRefusesBaseBomb(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	diamonds(t, root, 18)
	_, err := Build(root, "l0")
	g.Expect(err).To(MatchError(ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("l0: kustomize would build its bases and components more than 10000 times"))

	root = t.TempDir()
	diamonds(t, root, 3)
	objs, err := Build(root, "l0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(objs)).To(ConsistOf("ConfigMap/x-x-x-c", "ConfigMap/x-x-y-c", "ConfigMap/x-y-x-c", "ConfigMap/x-y-y-c",
		"ConfigMap/y-x-x-c", "ConfigMap/y-x-y-c", "ConfigMap/y-y-x-c", "ConfigMap/y-y-y-c"))
}
