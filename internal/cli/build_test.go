package cli

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const appYAML = `apiVersion: gitsync.dev/v1alpha1
kind: GitRepository
metadata:
  name: app-repo
spec:
  url: https://git.example.com/app.git
---
apiVersion: gitsync.dev/v1alpha1
kind: Application
metadata:
  name: web
  namespace: team-a
spec:
  sourceRef: {kind: GitRepository, name: app-repo}
  path: ./app
  targetNamespace: web-prod
`

// build --from-file --path renders without a cluster: the kubeconfig does not exist.
func TestBuildOffline(t *testing.T) {
	g := NewWithT(t)
	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/namespace.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web-prod\n"
	dir := localCopy(t, files)
	appFile := filepath.Join(t.TempDir(), "app.yaml")
	g.Expect(os.WriteFile(appFile, []byte(appYAML), 0o644)).To(Succeed())

	offline := func(args ...string) result {
		var out, errOut syncBuffer
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
		code := Execute(context.Background(), root, append(args, "--kubeconfig", filepath.Join(t.TempDir(), "none")))
		return result{out: out.String(), err: errOut.String(), code: code}
	}
	r := offline("build", "app", "web", "--from-file", appFile, "--path", dir)
	g.Expect(r.code).To(Equal(0), r.String())
	docs := strings.Split(r.out, "\n---\n")
	g.Expect(docs).To(HaveLen(4), r.out)
	g.Expect(r.out).To(ContainSubstring("gitsync.dev/application: web\n"))
	g.Expect(r.out).To(ContainSubstring("gitsync.dev/application-namespace: team-a\n"))
	// Namespaced objects land in targetNamespace; the Namespace stays cluster-scoped.
	g.Expect(regexp.MustCompile(`(?m)^  namespace: web-prod$`).FindAllString(r.out, -1)).To(HaveLen(3), r.out)
	g.Expect(r.out).To(ContainSubstring("password: '***'"))
	g.Expect(r.out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte("old-s3cret-value"))))

	r = offline("build", "app", "web", "--from-file", appFile, "--path", dir, "--show-secrets")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("password: " + base64.StdEncoding.EncodeToString([]byte("old-s3cret-value"))))

	r = offline("build", "app", "other", "--from-file", appFile, "--path", dir)
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring(`holds no Application named "other"`))
	r = offline("build", "app", "web", "--from-file", appFile)
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring("--from-file needs --path"))
}

// build app NAME without --path renders the source's current revision from the cluster.
func TestBuildFromSource(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	r := gitsync(t, "build", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("image: nginx:1.0"))
	g.Expect(regexp.MustCompile(`(?m)^  namespace: `+f.ns+`$`).FindAllString(r.out, -1)).To(HaveLen(3), r.out)
	g.Expect(r.out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte("old-s3cret-value"))))

	r = gitsync(t, "build", "app", "nope", "-n", f.ns)
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring(`Application "nope" not found`))
}
