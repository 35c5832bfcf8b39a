package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// An overlay outside any Git worktree (a CI job's plain directory) reads ../../base only
// when --root says the render may: as Argo CD's --local-repo-root.
func TestBuildRootOutsideAWorktree(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir() // not inside a Git worktree
	files := map[string]string{
		"base/kustomization.yaml":          "resources: [cm.yaml]\n",
		"base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n",
		"overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
	}
	for name, content := range files {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	appFile := filepath.Join(t.TempDir(), "app.yaml")
	g.Expect(os.WriteFile(appFile, []byte(appYAML), 0o644)).To(Succeed())
	build := func(args ...string) result {
		var out, errOut syncBuffer
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
		code := Execute(context.Background(), root, append([]string{"build", "app", "web", "--from-file", appFile,
			"--path", filepath.Join(dir, "overlays", "prod"), "--kubeconfig", filepath.Join(t.TempDir(), "none")}, args...))
		return result{out: out.String(), err: errOut.String(), code: code}
	}

	r := build()
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring(`"../../base" is outside the checkout`), "without --root the overlay is confined to itself")

	r = build("--root", dir)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("name: prod-settings"))

	r = build("--root", filepath.Join(dir, "base"))
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("is not inside --root"))
}
