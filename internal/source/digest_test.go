package source

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// writeTreeFiles creates files (path -> content) under dir. A content that
// starts with "->" makes a symlink to the rest; paths ending in "*" are
// executable (the "*" is dropped).
func writeTreeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		mode := os.FileMode(0o644)
		if p[len(p)-1] == '*' {
			p, mode = p[:len(p)-1], 0o755
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if len(content) > 2 && content[:2] == "->" {
			if err := os.Symlink(content[2:], full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil { // beat the umask
			t.Fatal(err)
		}
	}
}

func dirDigestOf(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTreeFiles(t, dir, files)
	d, err := DirDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirDigest(t *testing.T) {
	base := map[string]string{"a.yaml": "a", "dir/b.yaml": "b", "run.sh": "echo"}
	baseDigest := dirDigestOf(t, base)

	tests := []struct {
		name  string
		files map[string]string
		same  bool
	}{
		{name: "same content elsewhere", files: map[string]string{"run.sh": "echo", "dir/b.yaml": "b", "a.yaml": "a"}, same: true},
		{name: "content changed", files: map[string]string{"a.yaml": "A", "dir/b.yaml": "b", "run.sh": "echo"}},
		{name: "file renamed", files: map[string]string{"a2.yaml": "a", "dir/b.yaml": "b", "run.sh": "echo"}},
		{name: "file moved to another dir", files: map[string]string{"a.yaml": "a", "b.yaml": "b", "run.sh": "echo"}},
		{name: "exec bit set", files: map[string]string{"a.yaml": "a", "dir/b.yaml": "b", "run.sh*": "echo"}},
		{name: "symlink instead of file with the target as content", files: map[string]string{"a.yaml": "a", "dir/b.yaml": "b", "run.sh": "->echo"}},
		{name: "file removed", files: map[string]string{"a.yaml": "a", "dir/b.yaml": "b"}},
		{name: "content moved between files", files: map[string]string{"a.yaml": "", "dir/b.yaml": "ab", "run.sh": "echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := dirDigestOf(t, tt.files)
			g.Expect(d).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			if tt.same {
				g.Expect(d).To(Equal(baseDigest))
			} else {
				g.Expect(d).NotTo(Equal(baseDigest))
			}
		})
	}
}

func TestDirDigestCountsEmptyDirectoriesAsNothing(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeTreeFiles(t, dir, map[string]string{"a": "1"})
	before, err := DirDigest(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Join(dir, "x", "y"), 0o755)).To(Succeed())
	after, err := DirDigest(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before))
}

func TestDigesterIsOrderIndependent(t *testing.T) {
	g := NewWithT(t)
	var a, b digester
	recs := []digestRecord{
		{path: "x/1", kind: kindRegular, sum: [32]byte{1}},
		{path: "x-2", kind: kindExecutable, sum: [32]byte{2}},
		{path: "y", kind: kindSymlink, sum: [32]byte{3}},
	}
	for i := range recs {
		a.add(recs[i])
		b.add(recs[len(recs)-1-i])
	}
	g.Expect(a.digest()).To(Equal(b.digest()))

	var empty digester
	g.Expect(empty.digest()).To(Equal("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
}
