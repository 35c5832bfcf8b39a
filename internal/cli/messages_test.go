package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// brokenYAML opens a flow sequence at line 7 that never closes: go-yaml's parser
// reports it at its 0-based line (6).
const brokenYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  k: v\n  bad: [unclosed\n  z: y\n"

// A broken file's error names what was built once ("building X", not "building X:
// building X:") and the line an editor shows: from a local path, through kustomize, and
// in the status the operator writes.
func TestBuildErrorNamesThePathOnceAndTheLine(t *testing.T) {
	g := NewWithT(t)
	appFile := filepath.Join(t.TempDir(), "app.yaml")
	g.Expect(os.WriteFile(appFile, []byte(appYAML), 0o644)).To(Succeed())
	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/broken.yaml"] = brokenYAML
	dir := localCopy(t, files)

	r := gitsync(t, "build", "app", "web", "--from-file", appFile, "--path", dir)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(Equal("error: building " + dir + ": parsing app/broken.yaml: yaml: line 7: did not find expected ',' or ']'\n"))

	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [broken.yaml]\n"), 0o644)).To(Succeed())
	r = gitsync(t, "build", "app", "web", "--from-file", appFile, "--path", dir)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(HavePrefix("error: building " + dir + ": kustomize build app: "))
	g.Expect(r.err).To(ContainSubstring("yaml: line 7: did not find expected ',' or ']'"))

	// The operator's status says the same.
	f := newFixture(t, nil)
	sha := f.repo.Commit("main", "broken", files)
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(1), r.String())
	app := &gitsyncv1.Application{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		g.Expect(app.Status.LastAttemptedRevision).To(Equal("main@sha1:" + sha))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Message).To(Equal("building ./app at main@sha1:" + sha + ": parsing app/broken.yaml: yaml: line 7: did not find expected ',' or ']'"))
}
