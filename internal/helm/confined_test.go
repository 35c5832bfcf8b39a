package helm

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// secretOutside writes a file outside the checkout (another tenant's, or the pod's
// service-account token) and returns its path and content.
func secretOutside(t *testing.T) (string, string) {
	t.Helper()
	secret := "token-of-another-tenant-" + strings.Repeat("z", 8)
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("*\n!"+secret+"\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, secret
}

// chartMentions tells whether anything of a loaded chart holds s.
func chartMentions(c *chart.Chart, s string) bool {
	if c == nil {
		return false
	}
	for _, f := range append(append(c.Raw, c.Templates...), c.Files...) {
		if strings.Contains(string(f.Data), s) || strings.Contains(f.Name, s) {
			return true
		}
	}
	return false
}

// Issue 34, item 2: nothing of a chart directory is read through a symlink, whatever the
// file (.helmignore, read before the walk, included), and no read is unbounded or
// blocks: a link to /dev/zero, to a file outside the checkout holding a secret, a
// symlinked Chart.yaml, values.yaml or directory, a FIFO and a device are each refused,
// and the secret appears neither in the chart nor in the error. Before, .helmignore was
// read with os.ReadFile through any symlink (/dev/zero: memory without end; a FIFO: a
// read that never returns; a token: parsed as ignore rules).
func TestLoadDirReadsNothingThroughASymlink(t *testing.T) {
	outside, secret := secretOutside(t)
	outsideDir := filepath.Dir(outside)
	cases := []struct {
		name  string
		setup func(g Gomega, dir string)
		want  string
	}{
		{"helmignore to /dev/zero", func(g Gomega, dir string) {
			g.Expect(os.Symlink("/dev/zero", filepath.Join(dir, ".helmignore"))).To(Succeed())
		}, ".helmignore is a symlink"},
		{"helmignore to a secret outside the checkout", func(g Gomega, dir string) {
			g.Expect(os.Symlink(outside, filepath.Join(dir, ".helmignore"))).To(Succeed())
		}, ".helmignore is a symlink"},
		{"helmignore a FIFO", func(g Gomega, dir string) {
			g.Expect(syscall.Mkfifo(filepath.Join(dir, ".helmignore"), 0o644)).To(Succeed())
		}, ".helmignore is not a regular file"},
		{"helmignore larger than a chart file may be", func(g Gomega, dir string) {
			g.Expect(os.WriteFile(filepath.Join(dir, ".helmignore"), make([]byte, MaxFileSize+1), 0o644)).To(Succeed())
		}, "more than the"},
		{"Chart.yaml to a secret outside", func(g Gomega, dir string) {
			g.Expect(os.Remove(filepath.Join(dir, "Chart.yaml"))).To(Succeed())
			g.Expect(os.Symlink(outside, filepath.Join(dir, "Chart.yaml"))).To(Succeed())
		}, "Chart.yaml is a symlink"},
		{"values.yaml to a secret outside", func(g Gomega, dir string) {
			g.Expect(os.Symlink(outside, filepath.Join(dir, "values.yaml"))).To(Succeed())
		}, "values.yaml is a symlink"},
		{"a directory linked outside", func(g Gomega, dir string) {
			g.Expect(os.Symlink(outsideDir, filepath.Join(dir, "files"))).To(Succeed())
		}, "files is a symlink"},
		{"a template that is a FIFO", func(g Gomega, dir string) {
			g.Expect(syscall.Mkfifo(filepath.Join(dir, "templates", "pipe.yaml"), 0o644)).To(Succeed())
		}, "templates/pipe.yaml is not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			dir := filepath.Join(root, "chart")
			writeChart(t, dir, "tenant", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
			tc.setup(g, dir)
			c, err := LoadDir(root, dir)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(err.Error()).NotTo(ContainSubstring(outsideDir), "where a link points is not told")
			g.Expect(chartMentions(c, secret)).To(BeFalse())
		})
	}

	// A plain .helmignore is still honoured.
	g := NewWithT(t)
	root := t.TempDir()
	writeChart(t, root, "tenant", map[string]string{".helmignore": "secret.txt\n", "secret.txt": "x", "templates/cm.yaml": "kind: ConfigMap\n"})
	c, err := LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range c.Files {
		g.Expect(f.Name).NotTo(Equal("secret.txt"))
	}
}

// Issue 34, item 2: a values file is read on the same terms: a FIFO is refused (before,
// os.ReadFile blocked on it for ever), as are /dev/zero and a directory on the way that
// is a symlink leaving the checkout; a file within the caps reads as before.
func TestReadValuesDataConfined(t *testing.T) {
	g := NewWithT(t)
	outside, secret := secretOutside(t)
	root := t.TempDir()
	dir := filepath.Join(root, "chart")
	writeChart(t, dir, "tenant", map[string]string{"env/prod.yaml": "a: 1\n"})
	g.Expect(syscall.Mkfifo(filepath.Join(dir, "env", "fifo.yaml"), 0o644)).To(Succeed())
	g.Expect(os.Symlink("/dev/zero", filepath.Join(dir, "env", "zero.yaml"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Dir(outside), filepath.Join(dir, "linked"))).To(Succeed())

	for name, want := range map[string]string{
		"env/fifo.yaml": "env/fifo.yaml is not a regular file",
		"env/zero.yaml": "env/zero.yaml is a symlink",
		"linked/token":  "linked is a symlink",
		"../../x.yaml":  "outside the checkout",
	} {
		_, err := ReadValuesData(root, dir, name)
		g.Expect(err).To(MatchError(ContainSubstring(want)), name)
		g.Expect(err.Error()).NotTo(ContainSubstring(secret))
	}
	data, err := ReadValuesData(root, dir, "env/prod.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("a: 1\n"))
}
